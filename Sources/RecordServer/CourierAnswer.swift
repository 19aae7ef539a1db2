import NIOCore
import RecordModel
import RecordStore

/// A courier long-poll's JSON answer: the notifications after the client's cursor and the cursor
/// to send next (the last one's, or the client's own when there is none). The API answers with
/// it at once; a parked long-poll's connection answers with it when the push hub hands it a share.
enum CourierAnswer {
    static func json(_ notifications: [StoredNotification], cursor: Int64) -> JSONValue {
        let last = notifications.last?.id ?? cursor
        return ["notifications": .array(notifications.map { .raw($0.payload) }), "cursor": .string(NotificationCursor.encode(last))]
    }

    /// The answer's body for the long-polls handed `share`: made once for all of them.
    static func body(_ share: PushShare) -> ByteBuffer {
        share.frames.frame(CourierAnswer.self) { ByteBuffer(bytes: json(share.notifications, cursor: share.cursor).serialized()) }
    }
}
