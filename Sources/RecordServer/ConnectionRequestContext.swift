import Hummingbird
import NIOCore

/// The framework's basic context plus the connection, which an event stream takes over.
struct ConnectionRequestContext: RequestContext {
    var coreContext: CoreRequestContextStorage
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        self.coreContext = .init(source: source)
        self.channel = source.channel
    }
}
