#!/usr/bin/env bash
# The benchmark suite of BENCHMARKS.md (issue 5; a documented command, not part of CI).
#
#   scripts/bench.sh                                  # every scenario at the default sizes
#   scripts/bench.sh --json ping-pong cli-cold-start  # some scenarios, one JSON object each
#   scripts/bench.sh --records 10000 --large 20000    # smaller sizes
#
# Builds release scorebook-bench, scorebook and scorebookd side by side (the subprocess
# scenarios run the two programs from the bench's own directory), then runs scorebook-bench with
# the arguments given. Knobs (environment): BENCH_SCRATCH (the SwiftPM scratch path,
# .build-bench), BENCH_NO_BUILD=1 (use what is built). Run it on a machine as quiet as you can
# get: `uptime` is printed before and after.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"

SCRATCH=${BENCH_SCRATCH:-.build-bench}
if [ -z "${BENCH_NO_BUILD:-}" ]; then
    for product in scorebook-bench scorebook scorebookd; do
        echo "bench: building a release $product (scratch path $SCRATCH)" >&2
        swift build -c release --product "$product" --scratch-path "$SCRATCH" >&2
    done
fi
BIN="$(swift build -c release --scratch-path "$SCRATCH" --show-bin-path)"
echo "bench: $(uptime)" >&2
"$BIN/scorebook-bench" "$@"
echo "bench: $(uptime)" >&2
