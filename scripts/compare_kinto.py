#!/usr/bin/env python3
"""The change feed from outside, with a plain client: scorebookd against Kinto.

Loads the same RECORDS records (~590 bytes of JSON each: Kinto stores each record dictionary the
first scorebookd answers) into every server, then fetches all of
them with one keep-alive HTTP/1.1 connection per server (Python's http.client, what urllib is
made of), decoding each answer with json.loads: scorebookd through `records/changes` pages of
400, Kinto's memory backend in one request. Rounds alternate between the servers so they share
the machine alike; each server's median round is reported in records per second, then each
ratio to the first server.

Beside the records per second, each server's CPU time a record served: the server process's
user and system time (all its threads, /proc/PID/stat) read just before and just after each
round, summed over the rounds and divided by the records fetched, in µs. Wall time on the development VM moves
with whatever else runs; CPU time a record hardly does, and it is what BENCHMARKS.md reports.
With Kinto's pid (--kinto-pid) also Kinto's CPU a record ÷ each scorebookd's: how many times
cheaper scorebookd serves a record. The clock counts in ticks (10 ms at 100 Hz): over seven
rounds of 10,000 records that is 0.14 µs a record.

    compare_kinto.py --scorebookd NAME=BINARY ... [--kinto URL [--kinto-pid PID]] [--records N] [--rounds N]

Started by scripts/compare-kinto.sh, which installs and starts Kinto and passes its server
process's pid; alone it also compares several scorebookd builds (an older build against this
one) without Kinto, each with its CPU a record.
"""
import argparse
import base64
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.parse

CONTAINER = "iCloud.scorebook.compare"
ZONE = "Feed"
CLOCK_TICKS_PER_SECOND = os.sysconf("SC_CLK_TCK")


def record_fields(index):
    """The same data for both servers: a name, a number and two notes."""
    return {
        "name": f"Player {index} of the comparison league, round robin",
        "value": index,
        "note": "a note of moderate length to bring it to size",
    }


def record_name(index):
    return f"Feed|~|{index:08d}-5B1DEB4D-3B7D-4BAD-9BDD-6F1C3A2E"


class Server:
    """One keep-alive connection to a server on loopback."""

    def __init__(self, url, headers):
        parts = urllib.parse.urlsplit(url)
        self.connection = http.client.HTTPConnection(parts.hostname, parts.port, timeout=60)
        self.headers = headers

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        headers = dict(self.headers)
        if data is not None:
            headers["Content-Type"] = "application/json"
        try:
            self.connection.request(method, path, body=data, headers=headers)
            answer = self.connection.getresponse()
        except (BrokenPipeError, ConnectionResetError, http.client.RemoteDisconnected):
            # The server closed the idle connection (while the other one was loaded): once more on a new one.
            self.connection.close()
            self.connection.request(method, path, body=data, headers=headers)
            answer = self.connection.getresponse()
        raw = answer.read()
        if answer.status >= 300:
            raise RuntimeError(f"{method} {path}: {answer.status} {raw[:300]!r}")
        return raw


class Scorebookd:
    """A daemon on a fresh SQLite store, a user and a zone of RECORDS records."""

    def __init__(self, name, binary, port, records, database=None):
        self.name = name
        self.directory = tempfile.mkdtemp(prefix=f"compare-{name}-")
        store = ["--database", database] if database else ["--data-dir", self.directory]
        self.log = open(os.path.join(self.directory, "daemon.log"), "w")
        self.process = subprocess.Popen([binary, "serve", *store, "--port", str(port), "--log-level", "warning", "--rate-limit", "100000"],
                                        stdout=self.log, stderr=subprocess.STDOUT)
        self.pid = self.process.pid
        wait_for_port(port, self.process)
        created = subprocess.run([binary, "user", "create", "compare", *store],
                                 check=True, capture_output=True, text=True, timeout=60)
        token = json.loads(created.stdout)["token"]
        self.server = Server(f"http://127.0.0.1:{port}", {"Authorization": f"Bearer {token}"})
        self.base = f"/database/1/{CONTAINER}/development/private"
        self.server.call("POST", self.base + "/zones/modify",
                         {"operations": [{"operationType": "create", "zone": {"zoneID": {"zoneName": ZONE}}}]})
        for start in range(0, records, 400):
            operations = [{"operationType": "create", "record": {
                "recordName": record_name(index), "recordType": "Player",
                "fields": {key: {"value": value} for key, value in record_fields(index).items()}}}
                for index in range(start, min(start + 400, records))]
            self.server.call("POST", self.base + "/records/modify", {"zoneID": {"zoneName": ZONE}, "operations": operations})

    def fetch_all(self, keep=None):
        """All records through records/changes pages of 400; returns (records, answer bytes).
        `keep`: a list that receives each record dictionary."""
        token, seen, size = None, 0, 0
        for _ in range(100_000):
            body = {"zoneID": {"zoneName": ZONE}, "resultsLimit": 400}
            if token:
                body["syncToken"] = token
            raw = self.server.call("POST", self.base + "/records/changes", body)
            page = json.loads(raw)
            seen += len(page["records"])
            if keep is not None:
                keep.extend(page["records"])
            size += len(raw)
            token = page["syncToken"]
            if not page["moreComing"]:
                break
        return seen, size

    def stop(self):
        self.process.terminate()
        self.process.wait(timeout=30)
        self.log.close()
        shutil.rmtree(self.directory, ignore_errors=True)


class Kinto:
    """A bucket and collection on a running Kinto holding `records`: the record dictionaries as
    scorebookd answers them (the same data in the same JSON, so both answers weigh alike).
    `pid`: Kinto's server process, for its CPU time; None leaves Kinto's CPU unmeasured."""

    def __init__(self, url, records, pid=None):
        self.name = "kinto"
        self.pid = pid
        if pid is not None:
            cpu_seconds(pid)  # fails early on a pid that is not a running process
        credentials = base64.b64encode(b"compare:secret").decode()
        self.server = Server(url, {"Authorization": f"Basic {credentials}"})
        self.server.call("PUT", "/v1/buckets/compare", {})
        self.server.call("PUT", "/v1/buckets/compare/collections/players", {})
        for start in range(0, len(records), 400):
            requests = [{"method": "PUT", "path": f"/buckets/compare/collections/players/records/{index:08d}",
                         "body": {"data": records[index]}} for index in range(start, min(start + 400, len(records)))]
            self.server.call("POST", "/v1/batch", {"requests": requests})

    def fetch_all(self):
        raw = self.server.call("GET", "/v1/buckets/compare/collections/players/records")
        return len(json.loads(raw)["data"]), len(raw)

    def stop(self):
        pass


def cpu_seconds(pid):
    """The process's user + system CPU time so far, every thread's: /proc/PID/stat fields 14
    (utime) and 15 (stime), in clock ticks."""
    with open(f"/proc/{pid}/stat") as stat:
        # Split after the command name's closing parenthesis: the name may hold spaces. The
        # first field after it is field 3, so field N is at index N - 3.
        fields = stat.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLOCK_TICKS_PER_SECOND


def wait_for_port(port, process):
    for _ in range(200):
        if process.poll() is not None:
            raise RuntimeError(f"the daemon on port {port} exited with {process.returncode}")
        try:
            http.client.HTTPConnection("127.0.0.1", port, timeout=1).request("GET", "/health")
            return
        except OSError:
            time.sleep(0.05)
    raise RuntimeError(f"nothing listens on port {port}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scorebookd", action="append", default=[], metavar="NAME=BINARY")
    parser.add_argument("--kinto", metavar="URL", help="a running Kinto (memory backend)")
    parser.add_argument("--kinto-pid", type=int, metavar="PID",
                        help="the running Kinto's server process (the Python process serving, not a wrapper), for its CPU time a record")
    parser.add_argument("--records", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--port", type=int, default=18480, help="the first daemon's port; the next ones count up")
    parser.add_argument("--postgres", metavar="URL", help="serve from PostgreSQL: each daemon the database URL + its name (created empty)")
    arguments = parser.parse_args()
    servers = []
    try:
        for offset, named in enumerate(arguments.scorebookd):
            name, binary = named.split("=", 1)
            database = f"{arguments.postgres.rstrip('/')}/compare_{name}" if arguments.postgres else None
            servers.append(Scorebookd(name, binary, arguments.port + offset, arguments.records, database))
        if arguments.kinto:
            if not servers:
                parser.error("Kinto is loaded with a scorebookd's records: name a --scorebookd too")
            records = []
            servers[0].fetch_all(keep=records)
            servers.append(Kinto(arguments.kinto, records, arguments.kinto_pid))
        elif arguments.kinto_pid is not None:
            parser.error("--kinto-pid without --kinto")
        if not servers:
            parser.error("nothing to compare: name a --scorebookd or --kinto")
        samples = {server.name: [] for server in servers}
        # CPU seconds and records over every round, per server: a round's CPU is a few 10 ms
        # ticks, so the figure is their sum over the sum of records, not one round's.
        cpu_totals = {server.name: [0.0, 0] for server in servers if server.pid is not None}
        for _ in range(arguments.rounds):
            for server in servers:
                # The server's CPU clock is read outside the timed stretch, the wall clock inside it.
                cpu_before = cpu_seconds(server.pid) if server.pid is not None else None
                start = time.perf_counter()
                seen, size = server.fetch_all()
                elapsed = time.perf_counter() - start
                cpu_after = cpu_seconds(server.pid) if server.pid is not None else None
                if seen != arguments.records:
                    raise RuntimeError(f"{server.name} returned {seen} of {arguments.records} records")
                samples[server.name].append(seen / elapsed)
                if cpu_before is not None:
                    cpu_totals[server.name][0] += cpu_after - cpu_before
                    cpu_totals[server.name][1] += seen
                server.bytes_per_record = size / seen
        first = statistics.median(samples[servers[0].name])
        cpu = {name: seconds / records * 1e6 for name, (seconds, records) in cpu_totals.items()}
        for server in servers:
            median = statistics.median(samples[server.name])
            cpu_note = f"; CPU {cpu[server.name]:.2f} µs a record (all rounds)" if server.name in cpu else ""
            print(f"{server.name}: {median:,.0f} records/s (median of {arguments.rounds}, "
                  f"{server.bytes_per_record:.0f} answer bytes a record), {median / first:.2f}x {servers[0].name}{cpu_note}")
        kinto = next((server for server in servers if isinstance(server, Kinto)), None)
        if kinto is not None and kinto.name in cpu:
            for server in servers:
                if server is kinto:
                    continue
                if cpu[server.name] > 0:
                    print(f"{kinto.name}'s CPU a record ÷ {server.name}'s: {cpu[kinto.name] / cpu[server.name]:.2f} "
                          f"({server.name} serves a record that many times cheaper)")
                else:
                    # Less than a clock tick over every round: no ratio to show.
                    print(f"{kinto.name}'s CPU a record ÷ {server.name}'s: — ({server.name}'s rounds took "
                          f"under one clock tick; raise --records)")
    finally:
        for server in servers:
            server.stop()


if __name__ == "__main__":
    sys.exit(main())
