import RecordModel
import RecordStore

/// A courier long-poll's JSON answer: the notifications after the client's cursor and the cursor
/// to send next (the last one's, or the client's own when there is none). The API answers with
/// it at once; the push hub writes it to parked long-polls.
enum CourierAnswer {
    static func json(_ notifications: [StoredNotification], cursor: Int64) -> JSONValue {
        let last = notifications.last?.id ?? cursor
        return ["notifications": .array(notifications.map { .raw($0.payload) }), "cursor": .string(NotificationCursor.encode(last))]
    }
}
