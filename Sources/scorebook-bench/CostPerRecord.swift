import Foundation
import RecordModel
import SQLiteDB
#if canImport(Glibc)
import Glibc
#endif

// CPU time per record: what a record costs the server, which unlike wall time does not move with
// whatever else the machine is doing. An in-process server's CPU is the process's less the
// client's own thread (the bench's clients block on their sockets, so a request never leaves the
// thread that sent it); a daemon's is its CPU-time clock.

/// CPU seconds of the calling thread.
func threadCPUSeconds() -> Double {
    var spec = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &spec)
    return Double(spec.tv_sec) + Double(spec.tv_nsec) / 1e9
}

/// The CPU seconds `body` cost this process outside the calling thread: an in-process server's
/// share of a client's blocking requests.
func serverCPUSeconds<T>(_ body: () throws -> T) rethrows -> (result: T, seconds: Double) {
    let process = processCPUSeconds(), thread = threadCPUSeconds()
    let result = try body()
    return (result, (processCPUSeconds() - process) - (threadCPUSeconds() - thread))
}

/// Microseconds from seconds over a count, rounded to a hundredth.
func microsecondsPer(_ seconds: Double, _ count: Int) -> Double {
    count > 0 ? (seconds / Double(count) * 1e8).rounded() / 100 : 0
}

/// The floor under serving a change feed: the zone's rows read straight from the store's SQLite
/// file by sequence in pages of 400, every column's bytes written to /dev/null, on this thread.
/// No JSON and no HTTP: what a record costs SQLite and the kernel, nothing more.
struct RawFeedFloor {
    let records: Int
    let cpuSeconds: Double

    init(databasePath: String, zone: String) throws {
        let connection = try SQLiteConnection(path: databasePath, readOnly: true)
        guard let zoneID = try connection.scalarInt("SELECT id FROM zones WHERE name = ? AND deleted = 0", [.text(zone)]) else {
            throw Subprocess.Failure(description: "no zone \(zone) in \(databasePath)")
        }
        let sink = open("/dev/null", O_WRONLY)
        defer { close(sink) }
        let sql = """
            SELECT name, type, tag, deleted, fields, parent, created_at, created_by, created_device, modified_at, modified_by, modified_device, seq
            FROM records WHERE zone_id = ? AND seq > ? ORDER BY seq LIMIT 400
            """
        var since: Int64 = 0
        var records = 0
        // A page's bytes are gathered in one buffer and written at once, as a server writes an answer.
        var buffer: [UInt8] = []
        buffer.reserveCapacity(1 << 20)
        let started = threadCPUSeconds()
        while true {
            var page = 0
            buffer.removeAll(keepingCapacity: true)
            try connection.readTransaction {
                try connection.query(sql, [.int(zoneID), .int(since)]) { row in
                    for column in [Int32(0), 1, 2, 4, 5, 7, 8, 10, 11] {
                        if let bytes = row.optionalBytes(column) { buffer.append(contentsOf: bytes) }
                    }
                    var numbers = (row.int64(3), row.int64(6), row.int64(9))
                    withUnsafeBytes(of: &numbers) { buffer.append(contentsOf: $0) }
                    since = row.int64(12)
                    page += 1
                }
            }
            _ = buffer.withUnsafeBytes { write(sink, $0.baseAddress, $0.count) }
            records += page
            if page < 400 { break }
        }
        cpuSeconds = threadCPUSeconds() - started
        self.records = records
    }
}
