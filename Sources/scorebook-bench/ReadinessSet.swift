import CNIOLinux
import Foundation

/// The bench client's side of a fan-out: one epoll set over all its connections, so a round
/// costs the reads of what arrived, not a `poll` over every socket (at 10,000 streams that scan
/// made the client, not the daemon, the slower side of the measurement).
final class ReadinessSet {
    private let epollDescriptor: Int32
    private var events: [epoll_event]

    init(_ connections: [RawHTTPConnection]) throws {
        epollDescriptor = epoll_create1(Int32(EPOLL_CLOEXEC))
        events = [epoll_event](repeating: epoll_event(), count: 1024)
        guard epollDescriptor >= 0 else { throw RawHTTPConnection.Failure(description: "epoll_create1 failed: errno \(errno)") }
        for (index, connection) in connections.enumerated() {
            var event = epoll_event()
            event.events = EPOLLIN.rawValue
            event.data.u64 = UInt64(index)
            guard epoll_ctl(epollDescriptor, EPOLL_CTL_ADD, connection.fd, &event) == 0 else {
                throw RawHTTPConnection.Failure(description: "epoll_ctl failed: errno \(errno)")
            }
        }
    }

    deinit { close(epollDescriptor) }

    /// Calls `body` with the index of each connection that has something to read (none after
    /// the timeout); returns how many there were.
    @discardableResult
    func wait(timeoutMilliseconds: Int32, _ body: (Int) throws -> Void) rethrows -> Int {
        let count = max(0, Int(epoll_wait(epollDescriptor, &events, Int32(events.count), timeoutMilliseconds)))
        for ready in 0..<count { try body(Int(events[ready].data.u64)) }
        return count
    }

    /// The most connections one `wait` reports.
    var capacity: Int { events.count }
}
