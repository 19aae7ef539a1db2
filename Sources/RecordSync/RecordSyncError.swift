import Foundation

/// Why a `SyncStore` call failed: one kind a program can switch on, and a sentence for people.
public struct RecordSyncError: Error, Sendable, Equatable, CustomStringConvertible {
    public enum Kind: String, Sendable {
        /// The local store could not be opened, read or written.
        case store
        /// The call needs an account and the store has none (`logIn` first).
        case notLoggedIn
        /// The server refused the account's token: log in again.
        case authentication
        /// No answer came back from the server (down, unreachable, timed out).
        case unreachable
        /// The server answered with an error.
        case server
        /// A record could not be read as the entity type asked for.
        case decoding
        /// Another process logged out, logged in or turned sync off during the call.
        case stopped
        /// The task was cancelled.
        case cancelled
    }

    public var kind: Kind
    public var message: String

    public init(_ kind: Kind, _ message: String) {
        self.kind = kind
        self.message = message
    }

    public var description: String { message }

    /// Any error of the layers below, as one of these.
    init(_ error: any Error) {
        switch error {
        case let error as RecordSyncError:
            self = error
        case is CancellationError:
            self.init(.cancelled, "cancelled")
        case let error as SyncStopped:
            self.init(.stopped, error.description)
        case let error as SyncError:
            if error.isAuthenticationFailure || error.description.contains("refused the token") {
                self.init(.authentication, error.description)
            } else if error.description.contains("unreachable") || error.description.contains("cannot reach") {
                self.init(.unreachable, error.description)
            } else {
                self.init(.server, error.description)
            }
        case RecordClientError.unreachable(let message):
            self.init(.unreachable, message)
        case let error as RecordClientError:
            self.init(.server, error.description)
        case let error as EntityDecodingError:
            self.init(.decoding, error.description)
        default:
            self.init(.store, String(describing: error))
        }
    }
}

/// Runs `body`, turning whatever it throws into a `RecordSyncError`.
func typed<T>(_ body: () throws -> T) throws(RecordSyncError) -> T {
    do { return try body() } catch { throw RecordSyncError(error) }
}

func typed<T>(_ body: () async throws -> T) async throws(RecordSyncError) -> T {
    do { return try await body() } catch { throw RecordSyncError(error) }
}
