#!/usr/bin/env bash
# The change feed against Kinto, from outside with a plain client.
#
#   scripts/compare-kinto.sh            # uses .build/release/scorebookd, or $SCOREBOOKD
#
# Installs Kinto from PyPI into a cached virtual environment ($SCOREBOOK_KINTO_VENV, default
# ~/.cache/scorebook/kinto-venv), starts it with its memory backend and scorebookd on a fresh
# SQLite store, both on loopback, loads the same records (~590 bytes of JSON each) into both and
# fetches them with one plain Python client connection per server in the same run: scorebookd
# through records/changes pages of 400, Kinto in one request (scripts/compare_kinto.py). Prints
# each server's records per second and the ratio, and each server process's CPU time a record
# served (user + system, all threads, from /proc/PID/stat around each round; all rounds, µs)
# with Kinto's ÷ scorebookd's: wall time on the development VM moves with the machine's other load,
# CPU time a record hardly does, and it is what BENCHMARKS.md reports. The CPU clock counts 10 ms
# ticks, 0.14 µs a record over seven rounds of 10,000.
#
# Knobs: COMPARE_RECORDS (default 10000), COMPARE_ROUNDS (default 7), KINTO_PORT (default 18888),
# SCOREBOOKD_PORT (default 18480).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BIN="${SCOREBOOKD:-$ROOT/.build/release/scorebookd}"
VENV="${SCOREBOOK_KINTO_VENV:-${XDG_CACHE_HOME:-$HOME/.cache}/scorebook/kinto-venv}"
RECORDS="${COMPARE_RECORDS:-10000}"
ROUNDS="${COMPARE_ROUNDS:-7}"
KINTO_PORT="${KINTO_PORT:-18888}"
SCOREBOOKD_PORT="${SCOREBOOKD_PORT:-18480}"

[ -x "$BIN" ] || { echo "compare-kinto: no scorebookd at $BIN (swift build -c release --product scorebookd, or set SCOREBOOKD)" >&2; exit 2; }
if [ ! -x "$VENV/bin/kinto" ]; then
    echo "compare-kinto: installing Kinto into $VENV" >&2
    python3 -m venv "$VENV"
    "$VENV/bin/pip" install --quiet kinto
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/compare-kinto.XXXXXX")
kinto_pid=""
cleanup() {
    # Kinto dies of the TERM (wait answers 143): under set -e that would end the trap before the
    # rm and make the script's status 143.
    if [ -n "$kinto_pid" ] && kill "$kinto_pid" 2>/dev/null; then
        wait "$kinto_pid" 2>/dev/null || true
    fi
    rm -rf "$WORK"
}
trap cleanup EXIT

# Memory backends throughout; any basic-auth user may create a bucket; a batch and a listing
# take every record at once (no pagination).
cat > "$WORK/kinto.ini" <<INI
[app:main]
use = egg:kinto
kinto.storage_backend = kinto.core.storage.memory
kinto.storage_url =
kinto.cache_backend = kinto.core.cache.memory
kinto.cache_url =
kinto.permission_backend = kinto.core.permission.memory
kinto.permission_url =
kinto.userid_hmac_secret = compare-kinto-$(date +%s)
multiauth.policies = basicauth
kinto.bucket_create_principals = system.Authenticated
kinto.batch_max_requests = 1000
kinto.storage_max_fetch_size = $((RECORDS + 1))

[server:main]
use = egg:waitress#main
host = 127.0.0.1
port = $KINTO_PORT
threads = 4

[loggers]
keys = root

[handlers]
keys = console

[formatters]
keys = plain

[logger_root]
level = WARNING
handlers = console

[handler_console]
class = StreamHandler
args = (sys.stderr,)
formatter = plain

[formatter_plain]
format = %(message)s
INI

"$VENV/bin/kinto" start --ini "$WORK/kinto.ini" > "$WORK/kinto.log" 2>&1 &
kinto_pid=$!
for _ in $(seq 1 200); do
    python3 -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$KINTO_PORT/v1/', timeout=1)" 2>/dev/null && break
    kill -0 "$kinto_pid" 2>/dev/null || { echo "compare-kinto: Kinto exited:" >&2; cat "$WORK/kinto.log" >&2; exit 1; }
    sleep 0.1
done

# The process that serves, for its CPU time: `kinto start` runs pserve in its own process, but a
# reloading pserve (hupper) serves from a child, so follow a lone child down to the last one.
kinto_server_pid=$kinto_pid
while children=$(pgrep -P "$kinto_server_pid") && [ "$(printf '%s\n' "$children" | wc -l)" -eq 1 ]; do
    kinto_server_pid=$children
done

python3 "$ROOT/scripts/compare_kinto.py" --scorebookd "scorebookd=$BIN" --kinto "http://127.0.0.1:$KINTO_PORT" \
    --kinto-pid "$kinto_server_pid" --records "$RECORDS" --rounds "$ROUNDS" --port "$SCOREBOOKD_PORT"
