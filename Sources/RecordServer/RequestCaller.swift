import RecordStore
import Synchronization

/// Who a request turned out to be: the routes that authenticate note the user here
/// (`identified`), and the request log reads it once the answer is made; a caller that
/// authenticated with `ckWebAuthToken` is handed that token back in the answer.
final class RequestCaller: Sendable {
    @TaskLocal static var current: RequestCaller?

    private let noted = Mutex<(recordName: String?, webAuthToken: String?)>((nil, nil))

    var userRecordName: String? { noted.withLock { $0.recordName } }
    var webAuthToken: String? { noted.withLock { $0.webAuthToken } }

    /// Notes `user` as the current request's caller and returns it.
    static func identified(_ user: User) -> User {
        current?.noted.withLock { $0.recordName = user.recordName }
        return user
    }

    /// Notes that the current request was authenticated by this `ckWebAuthToken`.
    static func noteWebAuthToken(_ token: String?) {
        current?.noted.withLock { $0.webAuthToken = token }
    }
}
