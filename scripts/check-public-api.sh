#!/usr/bin/env bash
# Checks that the CLI is built from the library products' public API alone. The compiler does
# most of it: the CLI's targets (Scorebook, its logic, and scorebook, the executable) are declared
# with `packageAccess: false`, so a `package` symbol of RecordSync, ScorebookKit or the modules
# under them does not compile there, and `internal` ones never do. This script checks what the
# compiler does not: that those two targets keep `packageAccess: false`, and that no source
# outside Tests/ reaches internals with `@testable import` or `@_spi` (a debug build would
# accept either).
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
swift package dump-package | python3 -c '
import json, sys
targets = {target["name"]: target for target in json.load(sys.stdin)["targets"]}
failed = False
for name in ("Scorebook", "scorebook"):
    if targets[name].get("packageAccess", True):
        print(f"Package.swift: target {name} must keep packageAccess: false (the CLI uses public API only)")
        failed = True
sys.exit(1 if failed else 0)
'
if grep -rnE '^\s*(@testable|@_spi\([^)]*\))\s+import' Sources/ Examples/*/Sources/; then
    echo "sources above reach internals of another module; only tests may" >&2
    exit 1
fi
echo "public API check: the CLI uses the library products' public API only"
