import HummingbirdCore
import Logging
import NIOCore
import NIOHTTPTypes

/// Hummingbird's HTTP/1 connection handling (`HTTP1Channel`) with a `PushConnection` at the end
/// of each pipeline, just before the framework's request handling, so a courier answer can
/// park the connection in the push hub.
struct PushHTTP1Channel: ServerChildChannel {
    typealias Value = HTTP1Channel.Value
    let http1: HTTP1Channel
    /// The long-polls' deadlines of all this server's connections.
    let deadlines = LongPollDeadlines()

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        http1.setup(channel: channel, logger: logger).flatMapThrowing { value in
            let pipeline = channel.pipeline.syncOperations
            // After the idle-timeout handler, so what a parked connection writes counts as its response.
            let stateHandler = try pipeline.handler(type: HTTPConnectionStateHandler.self)
            try pipeline.addHandler(PushConnection(deadlines: deadlines), position: .after(stateHandler))
            return value
        }
    }

    func handle(value: Value, logger: Logger) async {
        await http1.handle(value: value, logger: logger)
    }
}

extension HTTPServerBuilder {
    /// HTTP/1 with connections the push hub can park (see `PushConnection`).
    static func pushHTTP1(configuration: HTTP1Channel.Configuration) -> HTTPServerBuilder {
        .init { responder in PushHTTP1Channel(http1: HTTP1Channel(responder: responder, configuration: configuration)) }
    }
}
