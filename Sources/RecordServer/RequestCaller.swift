import RecordStore
import Synchronization

/// Who a request turned out to be, for its request log line: the routes that authenticate note
/// the user here (`identified`), and `RecordAPI.handle` reads it once the answer is made.
final class RequestCaller: Sendable {
    @TaskLocal static var current: RequestCaller?

    private let recordName = Mutex<String?>(nil)

    var userRecordName: String? { recordName.withLock { $0 } }

    /// Notes `user` as the current request's caller and returns it.
    static func identified(_ user: User) -> User {
        current?.recordName.withLock { $0 = user.recordName }
        return user
    }
}
