#!/usr/bin/env bash
# Builds everything and runs the whole test suite: unit and integration tests (integration tests
# start the real scorebookd and scorebook binaries on loopback), then the API conformance and
# fuzzing run (Schemas/openapi.yaml against the real daemon, with schemathesis from PyPI).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
swift build --build-tests
swift test --skip-build
scripts/api-conformance.sh
