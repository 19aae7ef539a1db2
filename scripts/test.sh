#!/usr/bin/env bash
# Builds everything and runs the whole test suite: unit and integration tests (integration tests
# start the real scorebookd and scorebook binaries on loopback), the public-API check of the CLI,
# the example app's build and two-machine test (Examples/Notes), the store suite a second time on
# PostgreSQL, the console script's unit tests (node), the documents' check (scripts/check-docs.sh),
# then the API conformance and fuzzing run (Schemas/openapi.yaml against the real daemon, with
# schemathesis from PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
# Debian packages the build and tests need (a no-op when present, as in CI after .ci/run).
scripts/install-deps.sh --tests
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
swift build --build-tests
# The CLI is built from the library products' public API alone (the compiler checks most of it).
scripts/check-public-api.sh
# The XCTest suite in two processes at once (scripts/run-xctests.sh says why and how).
scripts/run-xctests.sh 2
# The example app on the library, a package of its own: built alone (the layer only, no daemon),
# then its two machines synced through the scorebookd just built.
swift build --package-path Examples/Notes --build-tests
SCOREBOOKD="$PWD/.build/debug/scorebookd" swift test --package-path Examples/Notes --skip-build
# The store suite again, unchanged, on PostgreSQL: the tests start a throw-away cluster of their
# own (Debian's postgresql 15 binaries; SCOREBOOK_SKIP_POSTGRES_TESTS=1 skips on a developer machine).
SCOREBOOK_STORE_BACKEND=postgres swift test --skip-build --filter RecordStoreTests
# The console's scoreboard arithmetic (its pure functions) against the cases the CLI's code is
# tested on (Fixtures/scoreboard-cases.json), with node: no browser needed.
node --test Tests/ConsoleScripts/scoreboard.test.js
# The documents: links and named paths exist, and every scorebook/scorebookd command line in them
# uses subcommands and flags the built binaries' --help lists.
scripts/check-docs.sh
scripts/api-conformance.sh
