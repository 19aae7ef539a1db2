import Foundation
import Hummingbird
import Logging
import NIOCore
import RecordModel
import RecordStore
import Synchronization

/// The context of every request the daemon's router answers: the framework's storage (the matched
/// endpoint, the path's parameters), the connection (which an event stream takes over), the
/// request's own id, and what the middleware learn on the way in: the request's facts (the
/// request-log middleware), its database address and collected body (the database group), its
/// caller and scope (the authentication middleware of its route).
package struct ConnectionRequestContext: RequestContext {
    package var coreContext: CoreRequestContextStorage
    /// Nil for a request answered in process (`InProcessResponder`), which has no connection.
    let channel: (any Channel)?
    /// Where a courier route answered in process leaves its parking, for the in-process caller
    /// to park in memory (`RecordAPI.parkInMemory`).
    let inProcessParking: InProcessParking?
    /// The `uuid` of the request's error answers and the `request` of its log line.
    let requestID = RandomID.uuidString()
    /// Who the request turned out to be, noted by the authentication middleware and read by the
    /// request log once the answer is made: a reference, so the outer middleware see it.
    let caller = RequestCaller()
    var facts = RequestFacts()
    /// `/database/1/{container}/{environment}/…`'s container and environment, checked.
    var address: DatabaseAddress?
    /// A database route's body, collected whole (`DatabaseAddressMiddleware`).
    var body: [UInt8] = []
    /// The authenticated user, for the operations that act as one.
    var user: User?
    /// The scope the operation acts in; nil for a bare courier request (its URL is its credential).
    var scope: DatabaseScope?
    /// A `records/modify` body read into drafts while the caller's token was checked.
    var parsedModifyBody: ParsedModifyBody?

    package init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
        self.inProcessParking = nil
    }

    /// A context without a connection, for a request answered in process.
    init(logger: Logger, parking: InProcessParking) {
        self.coreContext = .init(source: InProcessSource(logger: logger))
        self.channel = nil
        self.inProcessParking = parking
    }

    private struct InProcessSource: RequestContextSource {
        let logger: Logger
    }

    /// The request id of `context`: ours, or for another kind of context the framework's.
    static func requestID(of context: some RequestContext) -> String {
        (context as? ConnectionRequestContext)?.requestID ?? context.id
    }
}

/// The container and environment a database route acts in.
struct DatabaseAddress: Sendable {
    var container: String
    var environment: RecordStore.Environment
}

/// A courier answer's parking, left by its route for the in-process caller (there is no
/// connection to park it on).
final class InProcessParking: Sendable {
    let parking = Mutex<PushParking?>(nil)
}
