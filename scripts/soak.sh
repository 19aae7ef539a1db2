#!/usr/bin/env bash
# Soak test of scorebookd (issue 6; a documented command, not part of CI).
#
#   scripts/soak.sh                     # 600 s
#   DURATION=30 scripts/soak.sh         # a short run
#
# Builds (or takes $SCOREBOOKD) a release scorebookd, starts it on a fresh data directory, measures
# its peak write rate for PEAK_SECONDS with WRITERS concurrent clients, then writes at half that
# rate for DURATION seconds while SUBSCRIBERS Server-Sent-Events subscribers stay connected (spread
# over USERS users, each with a zone subscription), sampling the daemon's RSS from
# /proc/PID/status every SAMPLE_SECONDS. Prints a summary: rates, errors, write latency, RSS
# start/max/end, notifications delivered against those due. Then stops the daemon with SIGTERM
# (it must exit 0) and runs `scorebookd check` on the data directory.
#
# Knobs (environment): DURATION (600), SUBSCRIBERS (100), USERS (10), WRITERS (8),
# PEAK_SECONDS (5), SAMPLE_SECONDS (10), SCOREBOOKD (a prebuilt binary), SOAK_SCRATCH (the
# SwiftPM scratch path for the release build, .build-soak), SOAK_JSON (a file for the summary).
# The client side is python3 with the standard library only.
set -euo pipefail
cd "$(dirname "$0")/.."
command -v swift >/dev/null || export PATH="/opt/swift/usr/bin:$PATH"

DURATION=${DURATION:-600}
SUBSCRIBERS=${SUBSCRIBERS:-100}
USERS=${USERS:-10}
WRITERS=${WRITERS:-8}
PEAK_SECONDS=${PEAK_SECONDS:-5}
SAMPLE_SECONDS=${SAMPLE_SECONDS:-10}
SCRATCH=${SOAK_SCRATCH:-.build-soak}

BIN=${SCOREBOOKD:-}
if [ -z "$BIN" ]; then
    echo "soak: building a release scorebookd (scratch path $SCRATCH)" >&2
    swift build -c release --product scorebookd --scratch-path "$SCRATCH" >&2
    BIN="$(swift build -c release --scratch-path "$SCRATCH" --show-bin-path)/scorebookd"
fi
[ -x "$BIN" ] || { echo "soak: no scorebookd at $BIN" >&2; exit 1; }

DATA=$(mktemp -d /tmp/scorebook-soak-XXXXXX)
PID=""
cleanup() {
    if [ -n "$PID" ] && kill -0 "$PID" 2>/dev/null; then kill -KILL "$PID" 2>/dev/null || true; fi
    rm -rf "$DATA"
}
trap cleanup EXIT

"$BIN" serve --data-dir "$DATA/store" --port 0 --log-level error >"$DATA/stdout" 2>"$DATA/stderr" &
PID=$!
PORT=""
for _ in $(seq 1 200); do
    PORT=$(sed -n 's#^scorebookd listening on http://[^:]*:\([0-9]*\)$#\1#p' "$DATA/stdout" | head -1)
    [ -n "$PORT" ] && break
    kill -0 "$PID" 2>/dev/null || { echo "soak: scorebookd exited: $(cat "$DATA/stderr")" >&2; exit 1; }
    sleep 0.1
done
[ -n "$PORT" ] || { echo "soak: scorebookd printed no readiness line in 20 s" >&2; exit 1; }
echo "soak: scorebookd pid $PID on port $PORT; $DURATION s, $SUBSCRIBERS subscribers, $USERS users" >&2

: >"$DATA/tokens"
for i in $(seq 1 "$USERS"); do
    "$BIN" user create "soak$i" --data-dir "$DATA/store" |
        python3 -c 'import json,sys; print(json.load(sys.stdin)["token"])' >>"$DATA/tokens"
done

set +e
python3 - "$PORT" "$PID" "$DATA/tokens" "$DURATION" "$SUBSCRIBERS" "$WRITERS" "$PEAK_SECONDS" "$SAMPLE_SECONDS" \
    "${SOAK_JSON:-}" <<'PY'
import http.client, json, os, socket, sys, threading, time, uuid

port, pid = int(sys.argv[1]), int(sys.argv[2])
tokens = [t.strip() for t in open(sys.argv[3]) if t.strip()]
duration, subscriber_count, writer_count = float(sys.argv[4]), int(sys.argv[5]), int(sys.argv[6])
peak_seconds, sample_seconds, json_path = float(sys.argv[7]), float(sys.argv[8]), sys.argv[9]
CONTAINER = "iCloud.scorebook.soak"
BASE = f"/database/1/{CONTAINER}/development"
ZONE = "Soak"


def rss_kb():
    try:
        with open(f"/proc/{pid}/status") as status:
            for line in status:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def call(connection, path, token, body):
    data = json.dumps(body).encode()
    connection.request("POST", path, body=data, headers={
        "Authorization": f"Bearer {token}", "Content-Type": "application/json"})
    response = connection.getresponse()
    payload = response.read()
    return response.status, payload


def connect():
    return http.client.HTTPConnection("127.0.0.1", port, timeout=30)


# Set-up: a zone and a zone subscription per user.
setup = connect()
for token in tokens:
    status, body = call(setup, f"{BASE}/private/zones/modify", token,
                        {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": ZONE}}}]})
    assert status == 200, body
    status, body = call(setup, f"{BASE}/private/subscriptions/modify", token, {"operations": [{
        "operationType": "create", "subscription": {"subscriptionID": "soak", "subscriptionType": "zone",
                                                    "zoneID": {"zoneName": ZONE}}}]})
    assert status == 200, body


class Counters:
    def __init__(self):
        self.lock = threading.Lock()
        self.ok = [0] * len(tokens)
        self.errors = 0
        self.throttled = 0
        self.error_samples = []
        self.latencies = []

    def record(self, user, status, payload, seconds):
        with self.lock:
            if status == 200:
                self.ok[user] += 1
                self.latencies.append(seconds)
            else:
                if status == 429:
                    self.throttled += 1
                self.errors += 1
                if len(self.error_samples) < 5:
                    self.error_samples.append(f"{status} {payload[:200]!r}")


def write_one(connection, user, counters):
    name = f"soak-{uuid.uuid4()}"
    body = {"zoneID": {"zoneName": ZONE}, "operations": [{"operationType": "create", "record": {
        "recordName": name, "recordType": "SoakItem",
        "fields": {"n": {"value": 1}, "text": {"value": "x" * 100}}}}]}
    started = time.monotonic()
    try:
        status, payload = call(connection, f"{BASE}/private/records/modify", tokens[user], body)
    except (OSError, http.client.HTTPException) as error:
        counters.record(user, -1, str(error).encode(), 0)
        return connect()
    counters.record(user, status, payload, time.monotonic() - started)
    return connection


def writers(rate_per_writer, seconds, counters):
    """writer_count threads; rate_per_writer None means as fast as possible."""
    stop_at = time.monotonic() + seconds

    def run(index):
        connection = connect()
        user = index % len(tokens)
        next_at = time.monotonic()
        while True:
            now = time.monotonic()
            if now >= stop_at:
                break
            if rate_per_writer:
                if next_at > now:
                    time.sleep(min(next_at - now, stop_at - now))
                    continue
                next_at = max(next_at + 1.0 / rate_per_writer, now - 1.0)
            connection = write_one(connection, user, counters)
            user = (user + 1) % len(tokens)
        connection.close()

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(writer_count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(seconds + 60)


# 1. Peak write rate, briefly, before anyone subscribes.
peak = Counters()
writers(None, peak_seconds, peak)
peak_rate = sum(peak.ok) / peak_seconds
target_rate = max(1.0, peak_rate / 2)
print(f"soak: peak {peak_rate:.0f} writes/s over {peak_seconds:.0f} s with {writer_count} writers "
      f"({peak.errors} errors); now {target_rate:.0f} writes/s for {duration:.0f} s", file=sys.stderr)


# 2. Subscribers: one channel (tokens/create) and one event stream each.
class Subscriber(threading.Thread):
    def __init__(self, user, stop):
        super().__init__(daemon=True)
        self.user, self.stop = user, stop
        self.events = 0
        self.disconnects = 0
        self.errors = 0
        self.last_id = None
        self.connected = threading.Event()
        status, body = call(setup, f"{BASE}/tokens/create", tokens[user], {"apnsEnvironment": "development"})
        assert status == 200, body
        url = json.loads(body)["webcourierURL"]
        self.path = url[url.index("/database/"):]

    def run(self):
        while not self.stop.is_set():
            try:
                self.stream()
            except OSError:
                self.errors += 1
            if not self.stop.is_set():
                self.disconnects += 1
                time.sleep(0.2)

    def stream(self):
        sock = socket.create_connection(("127.0.0.1", port), timeout=5)
        sock.settimeout(1.0)
        head = (f"GET {self.path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nAuthorization: Bearer {tokens[self.user]}\r\n"
                f"Accept: text/event-stream\r\n")
        if self.last_id:
            head += f"Last-Event-ID: {self.last_id}\r\n"
        sock.sendall((head + "\r\n").encode())
        tail = b""
        try:
            while not self.stop.is_set():
                try:
                    chunk = sock.recv(65536)
                except socket.timeout:
                    continue
                if not chunk:
                    return
                self.connected.set()
                data = tail + chunk
                self.events += data.count(b"\ndata: ") - tail.count(b"\ndata: ")
                marker = data.rfind(b"\nid: ")
                if marker >= 0:
                    end = data.find(b"\n", marker + 5)
                    if end > 0:
                        self.last_id = data[marker + 5:end].decode(errors="replace").strip()
                tail = data[-64:]
        finally:
            sock.close()


stop = threading.Event()
subscribers = [Subscriber(i % len(tokens), stop) for i in range(subscriber_count)]
for subscriber in subscribers:
    subscriber.start()
for subscriber in subscribers:
    subscriber.connected.wait(10)

# 3. Half the peak rate for the duration, sampling RSS.
samples = [(0.0, rss_kb())]
soak_started = time.monotonic()
sampler_stop = threading.Event()


def sample():
    while not sampler_stop.wait(sample_seconds):
        samples.append((time.monotonic() - soak_started, rss_kb()))


sampler = threading.Thread(target=sample, daemon=True)
sampler.start()
load = Counters()
writers(target_rate / writer_count, duration, load)
elapsed = time.monotonic() - soak_started
sampler_stop.set()
time.sleep(3)  # let the last notifications arrive
samples.append((time.monotonic() - soak_started, rss_kb()))
stop.set()
for subscriber in subscribers:
    subscriber.join(5)

written = sum(load.ok)
due = sum(load.ok[s.user] for s in subscribers)
delivered = sum(s.events for s in subscribers)
short = sum(max(0, load.ok[s.user] - s.events) for s in subscribers)
latencies = sorted(load.latencies) or [0.0]
rss = [kb for _, kb in samples if kb is not None]
summary = {
    "durationSeconds": round(elapsed, 1),
    "peakWritesPerSecond": round(peak_rate, 1),
    "targetWritesPerSecond": round(target_rate, 1),
    "achievedWritesPerSecond": round(written / elapsed, 1),
    "writes": written,
    "errors": load.errors,
    "throttled": load.throttled,
    "errorSamples": load.error_samples,
    "writeLatencyMs": {"p50": round(1000 * latencies[len(latencies) // 2], 2),
                       "p99": round(1000 * latencies[min(len(latencies) - 1, int(len(latencies) * 0.99))], 2),
                       "max": round(1000 * latencies[-1], 2)},
    "subscribers": len(subscribers),
    "notificationsDue": due,
    "notificationsDelivered": delivered,
    "notificationsShort": short,
    "subscriberDisconnects": sum(s.disconnects for s in subscribers),
    "subscriberErrors": sum(s.errors for s in subscribers),
    "rssKB": {"start": rss[0] if rss else None, "max": max(rss) if rss else None, "end": rss[-1] if rss else None},
    "rssSamples": [[round(t, 1), kb] for t, kb in samples],
}
print(f"soak summary: {elapsed:.0f} s at {summary['achievedWritesPerSecond']:.0f} writes/s "
      f"(peak {peak_rate:.0f}, target {target_rate:.0f}); {written} writes, {load.errors} errors "
      f"({load.throttled} throttled); latency p50 {summary['writeLatencyMs']['p50']} ms, "
      f"p99 {summary['writeLatencyMs']['p99']} ms")
print(f"soak summary: {len(subscribers)} SSE subscribers: {delivered} notifications delivered of {due} due "
      f"({short} short), {summary['subscriberDisconnects']} disconnects, {summary['subscriberErrors']} errors")
if rss:
    print(f"soak summary: RSS start {rss[0] / 1024:.1f} MB, max {max(rss) / 1024:.1f} MB, end {rss[-1] / 1024:.1f} MB "
          f"({len(rss)} samples every {sample_seconds:.0f} s)")
print("soak json: " + json.dumps(summary))
if json_path:
    with open(json_path, "w") as out:
        json.dump(summary, out, indent=2)
sys.exit(1 if load.errors or short else 0)
PY
CLIENT=$?
set -e

kill -TERM "$PID"
STATUS=0
for _ in $(seq 1 150); do kill -0 "$PID" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$PID" 2>/dev/null; then
    echo "soak: scorebookd did not stop within 15 s of SIGTERM" >&2
    STATUS=1
else
    wait "$PID" || STATUS=$?
fi
PID=""
echo "soak: scorebookd exited with status $STATUS"
"$BIN" check --data-dir "$DATA/store" | sed 's/^/soak: check /'
[ "$CLIENT" -eq 0 ] && [ "$STATUS" -eq 0 ]
