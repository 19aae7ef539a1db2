#!/usr/bin/env python3
"""Checks the repository's Markdown files against the repository and the built programs.

A document fails the check when it
  - links to a file that does not exist (`[text](path)`, `![alt](path)`, `[label]: path`), or to a
    heading of a Markdown file that has no such heading (`path#anchor`, `#anchor`);
  - names a repository path in inline code (`Sources/…`, `scripts/…`, `docs/…`, …) that matches
    no file or folder;
  - names a `scorebook …` or `scorebookd …` command line, in a code block or in inline code, whose
    subcommands or flags the binary's `--help` does not list;
  - points at documents outside the repository (a sibling shared folder, the external contract or
    the design note, or their numbered sections): a reader of the repository does not have them.

Every problem is printed as `FILE:LINE: message`; the exit status is 1 when there is one.
The binaries are run from `.build/debug/` (build them first: `swift build`).

Usage: scripts/check_docs.py [--root DIR] [--bin-dir DIR] [FILE.md …]
Standard library only.
"""

import argparse
import glob
import os
import re
import shlex
import subprocess
import sys
import unicodedata

BINARIES = ("scorebook", "scorebookd")
# Top-level folders whose paths, named in inline code, must exist.
PATH_ROOTS = ("Sources/", "Tests/", "scripts/", "docs/", "Schemas/", "Fixtures/", "Benchmarks/", ".ci/")
SKIPPED_DIRS = {".build", ".git", ".swiftpm", "node_modules"}


# ---------------------------------------------------------------------------------------------
# Markdown reading


class Document:
    """One Markdown file: its prose lines (code blocks blanked), its code blocks and headings."""

    def __init__(self, path, text):
        self.path = path
        self.lines = text.split("\n")
        self.prose = []          # (line number, text) outside fenced code blocks
        self.code_blocks = []    # (info string, [(line number, text)])
        self.headings = []
        fence = None
        block = []
        for number, line in enumerate(self.lines, start=1):
            stripped = line.strip()
            opening = re.match(r"^(\s*)(`{3,}|~{3,})(.*)$", line)
            if fence is None and opening:
                fence = (opening.group(2)[0], len(opening.group(2)), opening.group(3).strip())
                block = []
                continue
            if fence is not None:
                if re.match(r"^\s*" + re.escape(fence[0]) + "{%d,}\\s*$" % fence[1], line):
                    self.code_blocks.append((fence[2], block))
                    fence = None
                else:
                    block.append((number, line))
                continue
            self.prose.append((number, line))
            heading = re.match(r"^#{1,6}\s+(.*?)\s*#*\s*$", stripped)
            if heading:
                self.headings.append(heading.group(1))
        if fence is not None:
            self.code_blocks.append((fence[2], block))

    def anchors(self):
        """GitHub's anchors for the headings: lower case, punctuation dropped, spaces to '-'."""
        seen = {}
        result = set()
        for heading in self.headings:
            text = re.sub(r"`([^`]*)`", r"\1", heading)
            text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
            slug = "".join(c for c in text.lower()
                           if c in " -_" or unicodedata.category(c)[0] in "LN")
            slug = slug.replace(" ", "-")
            count = seen.get(slug, 0)
            seen[slug] = count + 1
            result.add(slug if count == 0 else "%s-%d" % (slug, count))
        return result


def inline_code_spans(line):
    """The inline code spans of a prose line, with backtick runs of any length."""
    spans = []
    position = 0
    while True:
        start = line.find("`", position)
        if start < 0:
            return spans
        run = re.match(r"`+", line[start:]).group(0)
        end = line.find(run, start + len(run))
        while end >= 0 and line[end + len(run):end + len(run) + 1] == "`":
            end = line.find(run, end + len(run) + 1)
        if end < 0:
            return spans
        spans.append(line[start + len(run):end].strip())
        position = end + len(run)


def without_code(line):
    """A prose line with its inline code spans blanked, so links inside code are not links."""
    return re.sub(r"(`+)(?:(?!\1).)+?\1", lambda m: " " * len(m.group(0)), line)


# ---------------------------------------------------------------------------------------------
# Links and paths


LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
REFERENCE_DEFINITION = re.compile(r"^\s{0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")


def check_links(document, root, documents, problems):
    for number, line in document.prose:
        text = without_code(line)
        targets = [m.group(1) for m in LINK.finditer(text)]
        definition = REFERENCE_DEFINITION.match(text)
        if definition:
            targets.append(definition.group(1))
        for target in targets:
            problem = link_problem(document.path, target, root, documents)
            if problem:
                problems.append((document.path, number, problem))


def link_problem(source, target, root, documents):
    if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.IGNORECASE):   # http:, https:, mailto:
        return None
    path_part, _, anchor = target.partition("#")
    if path_part:
        if path_part.startswith("/"):
            resolved = os.path.normpath(os.path.join(root, path_part.lstrip("/")))
        else:
            resolved = os.path.normpath(os.path.join(os.path.dirname(source), path_part))
        if os.path.relpath(resolved, root).split(os.sep)[0] == "..":
            return "link %s points outside the repository" % target
        if not os.path.exists(resolved):
            return "link to a missing file: %s" % target
    else:
        resolved = source
    if anchor and resolved.endswith(".md") and os.path.isfile(resolved):
        linked = documents.get(resolved) or load_document(resolved)
        if anchor.lower() not in linked.anchors():
            return "link to a missing heading: %s" % target
    return None


def check_named_paths(document, root, problems):
    for number, line in document.prose:
        for span in inline_code_spans(line):
            for word in span.split():
                word = word.rstrip(".,;:)")
                if not word.startswith(PATH_ROOTS) or re.search(r"[<>{}$…]|\.\.\.|XXX", word):
                    continue
                path = word.split("#")[0].split(":")[0]
                if not glob.glob(os.path.join(root, path)):
                    problems.append((document.path, number, "names a path that does not exist: %s" % path))


OUTSIDE_DOCUMENT = re.compile(r"\.\./shared/|\bCONTRACT(\.md)?\b|\bDESIGN\.md\b|§\s?\d")


def check_outside_references(document, problems):
    for number, line in enumerate(document.lines, start=1):
        found = OUTSIDE_DOCUMENT.search(line)
        if found:
            problems.append((document.path, number,
                             "points at a document outside the repository: %s" % found.group(0)))


# ---------------------------------------------------------------------------------------------
# Command lines


class HelpCatalog:
    """What each command of the built binaries accepts, read from its `--help`."""

    def __init__(self, bin_dir):
        self.bin_dir = bin_dir
        self.cache = {}

    def command(self, path):
        """(options {name: takes a value}, subcommands, takes arguments) for a command path, or None."""
        key = tuple(path)
        if key not in self.cache:
            self.cache[key] = self._read(path)
        return self.cache[key]

    def _read(self, path):
        executable = os.path.join(self.bin_dir, path[0])
        try:
            result = subprocess.run([executable] + list(path[1:]) + ["--help"], capture_output=True,
                                    text=True, timeout=30)
        except OSError as error:
            sys.exit("check-docs: cannot run %s (%s); build it first: swift build" % (executable, error))
        if result.returncode != 0:
            return None
        options = {"--help": False, "-h": False, "--version": False}
        subcommands = set()
        section = None
        takes_arguments = False
        for line in result.stdout.split("\n"):
            header = re.match(r"^([A-Z][A-Z ]+)(\s*\(.*\))?:\s*$", line)
            if header:
                section = header.group(1).strip()
                takes_arguments = takes_arguments or section == "ARGUMENTS"
                continue
            if section == "SUBCOMMANDS":
                name = re.match(r"^  ([a-z][a-z0-9-]*)(\s|$)", line)
                if name:
                    subcommands.add(name.group(1))
            elif section and section.endswith("OPTIONS"):
                option = re.match(r"^\s+(-.*?)(\s{2,}|$)", line)
                if option:
                    for spelling in option.group(1).split(","):
                        parts = spelling.split()
                        if not parts or not parts[0].startswith("-"):
                            continue
                        takes_value = len(parts) > 1 and parts[1].startswith("<")
                        flag = parts[0]
                        if "[no-]" in flag:
                            options[flag.replace("[no-]", "")] = takes_value
                            options[flag.replace("[no-]", "no-")] = takes_value
                        else:
                            options[flag] = takes_value
        return options, subcommands, takes_arguments


SEPARATORS = re.compile(r"\$\(|`|\|\||&&|[;|&()]")


def command_lines(text):
    """The `scorebook`/`scorebookd` invocations in one line of shell or prose: lists of words."""
    found = []
    for segment in SEPARATORS.split(text):
        try:
            words = shlex.split(segment, comments=True)
        except ValueError:
            words = segment.split()
        while words and re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", words[0]):
            words = words[1:]
        if words and words[0] in ("sudo", "exec", "time", "nohup"):
            words = words[1:]
        if not words:
            continue
        program = words[0].rsplit("/", 1)[-1]
        if program in BINARIES and (words[0] == program or "/" in words[0]):
            found.append([program] + words[1:])
    return found


def command_problem(words, catalog):
    """Why a command line does not match the binary's help, or None."""
    program = words[0]
    path = [program]
    described = catalog.command(path)
    if described is None:
        return "cannot read %s --help" % program
    globals_ = dict(described[0]) if program == "scorebook" else {}
    options, subcommands, takes_arguments = described
    words = words[1:]
    index = 0
    positional_seen = False
    while index < len(words):
        word = words[index].strip("[]")
        index += 1
        if word in ("", "…", "...", "|") or word.startswith(">") or word.startswith("2>"):
            continue
        if word == "--":
            break
        if word.startswith("-") and len(word) > 1 and not re.match(r"^-\d", word):
            flag = word.split("=", 1)[0]
            known = dict(globals_)
            known.update(options)
            if flag not in known:
                return "%s: no option %s (see %s --help)" % (" ".join(path), flag, " ".join(path))
            if known[flag] and "=" not in word:
                index += 1
            continue
        if path[1:2] == ["help"]:
            break
        if subcommands and not positional_seen:
            if word in subcommands:
                path.append(word)
                described = catalog.command(path)
                if described is None:
                    return "cannot read %s --help" % " ".join(path)
                options, subcommands, takes_arguments = described
                continue
            if word == "help" and len(path) == 1:
                path.append("help")
                continue
            if re.match(r"^[a-z][a-z-]*$", word) and not takes_arguments:
                return "%s has no subcommand %s" % (" ".join(path), word)
        positional_seen = True
    return None


def check_commands(document, catalog, problems):
    candidates = []
    for info, block in document.code_blocks:
        if info.split()[:1] and info.split()[0] in ("json", "yaml", "sql", "swift", "python", "http", "text"):
            continue
        joined = ""
        first = None
        for number, line in block:
            if first is None:
                first = number
            if line.rstrip().endswith("\\"):
                joined += line.rstrip()[:-1] + " "
                continue
            candidates.append((first, joined + line))
            joined, first = "", None
        if joined:
            candidates.append((first, joined))
    for number, line in document.prose:
        for span in inline_code_spans(line):
            candidates.append((number, span))
    for number, text in candidates:
        text = re.sub(r"^\s*\$\s+", "", text)
        for words in command_lines(text):
            problem = command_problem(words, catalog)
            if problem:
                problems.append((document.path, number, "%s in `%s`" % (problem, " ".join(words))))


# ---------------------------------------------------------------------------------------------


def load_document(path):
    with open(path, encoding="utf-8") as handle:
        return Document(path, handle.read())


def markdown_files(root):
    found = []
    for directory, subdirectories, files in os.walk(root):
        subdirectories[:] = sorted(d for d in subdirectories if d not in SKIPPED_DIRS)
        found.extend(os.path.join(directory, name) for name in sorted(files) if name.endswith(".md"))
    return found


def main(arguments):
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--root", default=os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    parser.add_argument("--bin-dir")
    parser.add_argument("files", nargs="*")
    options = parser.parse_args(arguments)
    root = os.path.abspath(options.root)
    catalog = HelpCatalog(os.path.abspath(options.bin_dir or os.path.join(root, ".build", "debug")))
    paths = [os.path.abspath(f) for f in options.files] or markdown_files(root)
    documents = {path: load_document(path) for path in paths}
    problems = []
    for path in paths:
        document = documents[path]
        check_links(document, root, documents, problems)
        check_named_paths(document, root, problems)
        check_outside_references(document, problems)
        check_commands(document, catalog, problems)
    for path, number, message in problems:
        print("%s:%d: %s" % (os.path.relpath(path, root), number, message))
    print("check-docs: %d Markdown files, %d problems" % (len(paths), len(problems)),
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
