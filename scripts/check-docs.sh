#!/usr/bin/env bash
# Checks every Markdown file of the repository: links and named paths must exist, and every
# `scorebook …`/`scorebookd …` command line must use subcommands and flags the built binaries'
# --help lists (the binaries of .build/debug/, so run it after `swift build`). Prints FILE:LINE:
# problem for each and fails if there is one. The checker's own tests run first.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 scripts/test_check_docs.py
python3 scripts/check_docs.py "$@"
