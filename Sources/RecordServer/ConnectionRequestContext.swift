import Foundation
import Hummingbird
import NIOCore

/// The framework's basic context plus the connection, which an event stream takes over, and the
/// request's own id.
struct ConnectionRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel
    /// The `uuid` of the request's error answers and the `request` of its log line.
    let requestID = UUID().uuidString.lowercased()

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }

    /// The request id of `context`: ours, or for another kind of context the framework's.
    static func requestID(of context: some RequestContext) -> String {
        (context as? ConnectionRequestContext)?.requestID ?? context.id
    }
}
