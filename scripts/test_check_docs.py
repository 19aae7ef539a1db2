#!/usr/bin/env python3
"""Tests of scripts/check_docs.py against a throw-away repository and stand-in binaries.

Run: python3 scripts/test_check_docs.py (scripts/check-docs.sh runs it before the real check).
"""

import io
import os
import stat
import sys
import tempfile
import textwrap
import unittest
from contextlib import redirect_stderr, redirect_stdout

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import check_docs  # noqa: E402

# What a stand-in `scorebook` prints for `--help` at each command path.
HELP = {
    "": """OVERVIEW: x

GLOBAL OPTIONS (every command takes them, before or after its name):
  --store <path>  The local store.
  --book <name>   The book.

OPTIONS:
  --version               Show the version.
  -h, --help              Show help information.

SUBCOMMANDS:
  person                  People.
  sync                    Sync.
""",
    "person": """USAGE: scorebook person <subcommand>

OPTIONS:
  -h, --help              Show help information.

SUBCOMMANDS:
  add                     Add a person.
""",
    "person add": """USAGE: scorebook person add <first> [--email <email>]

ARGUMENTS:
  <first>                 First name.

OPTIONS:
  --email <email>         Email address.
  -h, --help              Show help information.
""",
    "sync": """USAGE: scorebook sync [--watch]

OPTIONS:
  --watch                 Watch.
  -h, --help              Show help information.

SUBCOMMANDS:
  enable                  Turn sync on.
""",
    "sync enable": """USAGE: scorebook sync enable

OPTIONS:
  -h, --help              Show help information.
""",
}


class CheckDocsTests(unittest.TestCase):
    def setUp(self):
        self.directory = tempfile.TemporaryDirectory()
        self.root = self.directory.name
        bin_dir = os.path.join(self.root, "bin")
        os.makedirs(bin_dir)
        os.makedirs(os.path.join(self.root, "docs"))
        os.makedirs(os.path.join(self.root, "scripts"))
        with open(os.path.join(self.root, "scripts", "demo.sh"), "w") as handle:
            handle.write("")
        cases = "\n".join('  "%s") cat <<\'EOF\'\n%sEOF\n  ;;' % (key, text) for key, text in HELP.items())
        script = '#!/bin/sh\nargs=""\nfor a in "$@"; do [ "$a" = --help ] || args="${args:+$args }$a"; done\n' \
                 'case "$args" in\n%s\n  *) exit 64 ;;\nesac\n' % cases
        for name in ("scorebook", "scorebookd"):
            path = os.path.join(bin_dir, name)
            with open(path, "w") as handle:
                handle.write(script)
            os.chmod(path, os.stat(path).st_mode | stat.S_IEXEC)
        self.bin_dir = bin_dir

    def tearDown(self):
        self.directory.cleanup()

    def check(self, files):
        for name, text in files.items():
            with open(os.path.join(self.root, name), "w") as handle:
                handle.write(textwrap.dedent(text))
        output = io.StringIO()
        with redirect_stdout(output), redirect_stderr(io.StringIO()):
            status = check_docs.main(["--root", self.root, "--bin-dir", self.bin_dir])
        return status, output.getvalue().strip().split("\n") if output.getvalue().strip() else []

    def test_sound_documents_pass(self):
        status, lines = self.check({
            "README.md": """
                # Title
                See [the guide](docs/guide.md#keeping-score), [demo](scripts/demo.sh) and [below](#title).

                ```sh
                scorebook --book friday person add Ann --email a@example.com   # a comment --nothing
                M=$(scorebook person add Bob) && scorebook sync --watch
                SCOREBOOK_TOKEN=x scorebook sync enable
                ```
                Run `scorebook person add FIRST [--email E]` or `scorebook help person`; `scripts/demo.sh`.
                """,
            "docs/guide.md": "# Keeping score\n[back](../README.md)\n",
        })
        self.assertEqual(lines, [])
        self.assertEqual(status, 0)

    def test_missing_files_and_headings_are_reported_with_file_and_line(self):
        status, lines = self.check({
            "README.md": "# Title\n\nA [gone](docs/gone.md) link.\n[no heading](docs/guide.md#nowhere)\n`scripts/missing.sh`\n",
            "docs/guide.md": "# Guide\n[outside](../../elsewhere.md)\n",
        })
        self.assertEqual(status, 1)
        self.assertIn("README.md:3: link to a missing file: docs/gone.md", lines)
        self.assertIn("README.md:4: link to a missing heading: docs/guide.md#nowhere", lines)
        self.assertIn("README.md:5: names a path that does not exist: scripts/missing.sh", lines)
        self.assertTrue(any(line.startswith("docs/guide.md:2: link ../../elsewhere.md points outside") for line in lines), lines)

    def test_unknown_subcommands_and_flags_are_reported(self):
        status, lines = self.check({
            "README.md": """
                # Title

                ```
                scorebook person add Ann --mail a@example.com
                scorebook sync --wach
                ```
                Then `scorebook persons list`.
                """,
        })
        self.assertEqual(status, 1)
        self.assertEqual(len(lines), 3, lines)
        self.assertTrue(lines[0].startswith("README.md:5: scorebook person add: no option --mail"), lines)
        self.assertTrue(lines[1].startswith("README.md:6: scorebook sync: no option --wach"), lines)
        self.assertTrue(lines[2].startswith("README.md:8: scorebook has no subcommand persons"), lines)

    def test_references_to_documents_outside_the_repository_are_reported(self):
        # Spelled in pieces so that this file does not itself point outside the repository.
        section, shared = "\u00a7" + "3.9", "../" + "shared/"
        status, lines = self.check({
            "README.md": f"# T\n\nAs CONTRACT {section} says.\nSee {shared}spec/x.md and DESIGN.md.\nCONTRACTS and sections are fine.\n",
        })
        self.assertEqual(status, 1)
        self.assertEqual(lines, ["README.md:3: points at a document outside the repository: CONTRACT",
                                 "README.md:4: points at a document outside the repository: " + shared], lines)

    def test_links_and_commands_inside_code_are_not_links(self):
        status, lines = self.check({
            "README.md": "# T\n\n`[x](nowhere.md)` and\n\n```json\n{\"scorebook sync --nothing\": 1}\n```\n",
        })
        self.assertEqual((status, lines), (0, []))


if __name__ == "__main__":
    unittest.main()
