#!/usr/bin/env bash
# Runs the built XCTest suite (swift build --build-tests first) as SHARDS processes at once, the
# test classes dealt out in turn, and fails if any shard fails. Most tests wait on real
# processes, sockets, PostgreSQL and a browser rather than on the CPU, so two shards on two cores
# take a little over half the time of one. `swift test` cannot do this: it holds the build
# directory's lock for its whole run, and its --parallel mode starts one process per test method.
#
#   scripts/run-xctests.sh [SHARDS]      (default 2; 1 runs them in one process)
#
# Each shard's output goes to .build/xctest-shard-N.log and is printed when the shard ends.
set -euo pipefail
cd "$(dirname "$0")/.."
shards=${1:-2}
bundle=$(ls -d .build/debug/*PackageTests.xctest | head -n 1)
[ -x "$bundle" ] || { echo "run-xctests: no test bundle in .build/debug; run swift build --build-tests first" >&2; exit 1; }

# Module.Class, one a line, in a fixed order (the listing is Module.Class/method).
mapfile -t classes < <("$bundle" --list-tests | sed -n 's|^\([A-Za-z0-9_]*\.[A-Za-z0-9_]*\)/.*|\1|p' | sort -u)
[ "${#classes[@]}" -gt 0 ] || { echo "run-xctests: the bundle lists no tests" >&2; exit 1; }

declare -a pids logs
for ((shard = 0; shard < shards; shard++)); do
    selection=()
    for ((index = shard; index < ${#classes[@]}; index += shards)); do selection+=("${classes[index]}"); done
    [ "${#selection[@]}" -gt 0 ] || continue
    log=".build/xctest-shard-$((shard + 1)).log"
    (IFS=,; exec "$bundle" "${selection[*]}") >"$log" 2>&1 &
    pids+=($!)
    logs+=("$log")
done

failed=0
for index in "${!pids[@]}"; do
    if ! wait "${pids[index]}"; then failed=1; fi
    echo "=== ${logs[index]} ==="
    cat "${logs[index]}"
done
echo "=== summary ==="
for log in "${logs[@]}"; do
    grep -E "^[[:space:]]*Executed [0-9]+ tests?" "$log" | tail -n 1 | sed "s|^[[:space:]]*|$log: |"
    grep -E ": error: " "$log" || true
done
exit "$failed"
