#!/usr/bin/env bash
# The main job on a fresh machine: build, start scorebookd on an embedded SQLite store, create a
# user, and keep score of a first game with the scorebook CLI synced through the daemon.
# Leaves the daemon running (its pid and data are under $DEMO_DIR) unless DEMO_STOP=1.
set -euo pipefail
cd "$(dirname "$0")/.."
# Only what the demo needs: the two programs, scorebookd on SQLite alone (no PostgreSQL driver to
# compile). The test suite's packages and builds are scripts/test.sh's.
scripts/install-deps.sh
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"
swift build --product scorebookd --disable-default-traits
swift build --product scorebook --disable-default-traits
BIN=$(swift build --disable-default-traits --show-bin-path)
DEMO_DIR=${DEMO_DIR:-$(mktemp -d /tmp/scorebook-demo.XXXXXX)}
mkdir -p "$DEMO_DIR/data"

"$BIN/scorebookd" serve --data-dir "$DEMO_DIR/data" --port 0 >"$DEMO_DIR/daemon.out" 2>"$DEMO_DIR/daemon.log" &
echo $! >"$DEMO_DIR/daemon.pid"
for _ in $(seq 1 100); do grep -q listening "$DEMO_DIR/daemon.out" 2>/dev/null && break; sleep 0.1; done
URL=$(sed -n 's/^scorebookd listening on //p' "$DEMO_DIR/daemon.out")
[ -n "$URL" ] || { echo "scorebookd did not start:"; cat "$DEMO_DIR/daemon.log"; exit 1; }
echo "scorebookd is serving $URL (data in $DEMO_DIR/data)"
TOKEN=$("$BIN/scorebookd" user create "demo$$" --data-dir "$DEMO_DIR/data" | sed 's/.*"token":"\([0-9a-f]*\)".*/\1/')

sb() { echo "\$ scorebook $*"; "$BIN/scorebook" --store "$DEMO_DIR/laptop.sqlite" "$@"; }
sb account login --server "$URL" --token "$TOKEN"
sb person add Ada Lovelace
sb person add Alan Turing
sb game add Catan
echo "\$ scorebook match start --game Catan --players Ada,Alan"
MATCH=$("$BIN/scorebook" --store "$DEMO_DIR/laptop.sqlite" match start --game Catan --players Ada,Alan)
echo "$MATCH"
sb score add --match "$MATCH" --player Ada 10
sb score add --match "$MATCH" --player Alan 8
sb match finish "$MATCH"
sb match show "$MATCH"
sb sync
sb status
echo "\$ scorebook --store desktop.sqlite (a second machine)"
"$BIN/scorebook" --store "$DEMO_DIR/desktop.sqlite" account login --server "$URL" --token "$TOKEN"
"$BIN/scorebook" --store "$DEMO_DIR/desktop.sqlite" sync
"$BIN/scorebook" --store "$DEMO_DIR/desktop.sqlite" standings
if [ "${DEMO_STOP:-0}" = 1 ]; then kill "$(cat "$DEMO_DIR/daemon.pid")"; else echo "daemon pid $(cat "$DEMO_DIR/daemon.pid"); stop it with: kill $(cat "$DEMO_DIR/daemon.pid")"; fi
