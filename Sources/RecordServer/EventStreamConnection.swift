import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Sits on every HTTP connection between the HTTP codec and the framework's request handling.
/// Until the API answers a courier request with an event stream it only passes requests on; then
/// `adopt` parks the connection in the push hub, which writes events from this handler on the
/// channel's event loop. The framework's task for the connection is left waiting for a next
/// request that never comes (the stream's own inbound is swallowed), so an idle stream costs
/// no suspended response task, no timer and no per-event task hop.
final class EventStreamConnection: ChannelInboundHandler, RemovableChannelHandler, PushStreamSink, @unchecked Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundOut = HTTPResponsePart

    /// Set once the connection is added to a pipeline; `eventLoop` is only read after that.
    private var context: ChannelHandlerContext?
    private var loop: (any EventLoop)?
    private var stream: (hub: PushHub, databaseID: Int64, onClose: @Sendable () -> Void)?

    var eventLoop: any EventLoop { loop! }

    func handlerAdded(context: ChannelHandlerContext) {
        self.context = context
        self.loop = context.eventLoop
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        end()
        self.context = nil
    }

    func channelInactive(context: ChannelHandlerContext) {
        end()
        context.fireChannelInactive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        // A streaming connection reads nothing more (the client has nothing to say on it).
        guard stream == nil else { return }
        if case .head(var head) = unwrapInboundIn(data), head.headerFields[.connection]?.lowercased() == "close",
           head.headerFields[.accept]?.contains("text/event-stream") == true {
            // The framework would half-close the connection after the response head; an event
            // stream ends when either side closes it instead.
            head.headerFields[.connection] = nil
            context.fireChannelRead(wrapInboundOut(.head(head)))
            return
        }
        context.fireChannelRead(data)
    }

    /// Takes over the connection after the response head: writes the opening comment and parks
    /// the stream in `hub` at `cursor`. On the event loop. False when the connection has closed
    /// or the hub refuses (shutting down).
    func adopt(hub: PushHub, databaseID: Int64, after cursor: Int64, onOpen: () -> Void, onClose: @escaping @Sendable () -> Void) -> Bool {
        guard let context, context.channel.isActive, stream == nil else { return false }
        context.writeAndFlush(wrapOutboundOut(.body(EventStreamConnection.connectedBytes)), promise: nil)
        guard hub.register(self, databaseID: databaseID, after: cursor) else { return false }
        stream = (hub, databaseID, onClose)
        onOpen()
        return true
    }

    private static let connectedBytes = ByteBuffer(string: ": connected\n\n")

    func deliver(_ bytes: ByteBuffer) {
        guard let context, stream != nil else { return }
        // A client that stopped reading (64 KB unsent) is dropped rather than buffered without
        // bound; it resumes from its `Last-Event-ID` when it reconnects.
        guard context.channel.isWritable else {
            context.close(promise: nil)
            return
        }
        context.writeAndFlush(wrapOutboundOut(.body(bytes)), promise: nil)
    }

    func finish() {
        guard let context, stream != nil else { return }
        end()
        let channel = context.channel
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in channel.close(promise: nil) }
    }

    private func end() {
        guard let stream else { return }
        self.stream = nil
        stream.hub.unregister(self, databaseID: stream.databaseID)
        stream.onClose()
    }
}
