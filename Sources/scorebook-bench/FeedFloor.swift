import Foundation
import RecordModel
import RecordStore

#if canImport(Glibc)
import Glibc
#endif

/// The floor under the change feed, measured in the same run on the same zone: every page read
/// by the store's own statement and its records written as the same JSON (`zoneChangesJSON`, as
/// the daemon calls it), then written to a loopback TCP socket and read whole from its other
/// end, with no HTTP and no routes. What the feed takes above this is the daemon's; this is the
/// store's and the machine's.
struct FeedFloor {
    let seconds: Double
    let records: Int

    init(_ server: BenchServer, zone: String) async throws {
        let sockets = try SocketPairs(count: 1)
        defer { sockets.closeServers() }
        let sending = sockets.servers[0], receiving = sockets.clients[0]
        // Written without blocking, so the one thread can read what it wrote as it goes.
        _ = fcntl(sending, F_SETFL, fcntl(sending, F_GETFL) | O_NONBLOCK)
        let options = RecordJSONOptions(desiredKeys: nil, links: nil)
        var token: String?
        var records = 0
        let start = now()
        for _ in 0..<100_000 {
            let page = try await server.storage.zoneChangesJSON(server.scope, zone: ZoneID(zoneName: zone), syncToken: token,
                                                                resultsLimit: 400, recordTypes: nil, options: options)
            try FeedFloor.pass(page.records.json, from: sending, to: receiving)
            records += page.records.count
            token = page.syncToken
            if !page.moreComing { break }
        }
        seconds = now() - start
        self.records = records
    }

    /// Writes `bytes` to `sending` and reads them all from `receiving`.
    private static func pass(_ bytes: [UInt8], from sending: Int32, to receiving: RawHTTPConnection) throws {
        var written = 0
        var received = 0
        while received < bytes.count {
            if written < bytes.count {
                let count = bytes[written...].withUnsafeBytes { Glibc.write(sending, $0.baseAddress, $0.count) }
                if count > 0 { written += count } else if errno != EAGAIN { throw RawHTTPConnection.Failure(description: "write failed: \(errno)") }
            }
            if received < written {
                guard try receiving.fill() else { throw RawHTTPConnection.Failure(description: "the floor's socket closed") }
                received = receiving.withBuffered { $0.count }
            }
        }
        receiving.discardBuffered()
    }
}
