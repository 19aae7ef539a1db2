#!/usr/bin/env bash
# Installs the Debian 12 packages the build needs (Swift itself is assumed at /opt/swift or on
# PATH); with --tests also what only the test suite uses. Safe to run repeatedly.
#   scripts/install-deps.sh           the demo: build and run scorebookd (SQLite) and scorebook
#   scripts/install-deps.sh --tests   the whole test suite
set -euo pipefail
# libsqlite3-dev: both stores; libcurl4-openssl-dev: the scorebook CLI's HTTP client;
# zlib1g-dev: gzip on the wire (the daemon's compress-nio and the CLI both use zlib);
# libdeflate-dev: the daemon's gzip answers, each compressed whole.
packages=(libsqlite3-dev libcurl4-openssl-dev zlib1g-dev libdeflate-dev)
if [ "${1:-}" = "--tests" ]; then
    # postgresql: the PostgreSQL store tests start a throw-away cluster of their own (15 on Debian 12).
    # openssl: the server-to-server key tests make keys and sign requests with it.
    # chromium, chromium-driver: the console's browser tests drive headless Chromium over WebDriver.
    # nodejs: the console's scoreboard arithmetic has unit tests run by node (Tests/ConsoleScripts).
    # time: GNU time measures the CLI's peak memory (CLIPictureMemoryTests, scorebook-bench cli-memory).
    # sqlite3, curl: the API conformance run and a few tests use the command-line tools.
    packages+=(sqlite3 curl postgresql openssl chromium chromium-driver nodejs time)
fi
needed=()
for pkg in "${packages[@]}"; do
    dpkg -s "$pkg" >/dev/null 2>&1 || needed+=("$pkg")
done
if [ ${#needed[@]} -gt 0 ]; then
    SUDO=""
    [ "$(id -u)" -ne 0 ] && SUDO="sudo"
    $SUDO apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${needed[@]}"
fi
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
swift --version | head -1
