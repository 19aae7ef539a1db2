import NIOCore
import RecordStore

/// A parked connection as the hub knows it: an event stream or a long-poll waiting on its event
/// loop (a socket's `PushConnection`, or an in-memory one). The hub hands it notifications and
/// the cursor they follow, never bytes: how they are framed (Server-Sent Events in HTTP chunks,
/// a JSON answer) is the connection's business. Called on `eventLoop` only.
package protocol PushSink: AnyObject, Sendable {
    var eventLoop: any EventLoop { get }
    /// `share`'s notifications, if the connection is still parked as `parking` (the number it
    /// registered with): an event stream's next events, or a long-poll's whole answer.
    func deliver(_ share: PushShare, parking: UInt64)
    /// An event stream that had nothing written to it for a while shows it is alive. `frames`
    /// is shared by the connections this loop's job reaches (see `SharedFrames`).
    func heartbeat(_ frames: SharedFrames, parking: UInt64)
    /// Ends the stream, or answers the long-poll empty (the daemon is shutting down).
    func finish(parking: UInt64)
}

/// What one delivery hands the parked connections of one event loop whose clients had seen
/// everything up to the same cursor: the notifications after it. Usually every connection of a
/// database is at one cursor, so one share reaches thousands of them.
/// Unchecked Sendable: made, handed out and dropped within one job on its loop.
package final class PushShare: @unchecked Sendable {
    /// The notifications after `cursor`, oldest first; never empty.
    package let notifications: [StoredNotification]
    /// The cursor the clients had.
    package let cursor: Int64
    package let frames = SharedFrames()

    init(_ notifications: [StoredNotification], after cursor: Int64) {
        self.notifications = notifications
        self.cursor = cursor
    }

    /// The cursor the clients have once they have these.
    package var lastCursor: Int64 { notifications.last?.id ?? cursor }
}

/// Bytes the connections of one loop's job make once and all write: the first to need a frame
/// makes it, the rest reuse it (encoded per connection, a commit to 10,000 streams was 10,000
/// encodings). Made on the loop, so thousands of writes retaining one buffer do not fight another
/// loop's over its reference count. Unchecked Sendable: used within one job on its loop.
package final class SharedFrames: @unchecked Sendable {
    private var frames: [ObjectIdentifier: ByteBuffer] = [:]

    /// The frame of kind `kind` (a type naming one encoding), made by `make` the first time.
    package func frame(_ kind: Any.Type, _ make: () -> ByteBuffer) -> ByteBuffer {
        let key = ObjectIdentifier(kind)
        if let made = frames[key] { return made }
        let made = make()
        frames[key] = made
        return made
    }
}
