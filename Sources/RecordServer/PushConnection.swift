import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// The handler at the end of every HTTP connection's pipeline, just before the framework's
/// request handling. It passes everything through until the API answers a courier request;
/// then the response head has been written and `park` hands the connection to the push hub,
/// which writes the rest of the answer from here, on the channel's event loop:
/// - an event stream: events and heartbeats until either side leaves. The framework's task for
///   the connection is ended (its reader gets an error; the closes it then asks for are
///   ignored), so an idle stream holds no suspended task and none of the stack slabs its
///   request reached; reads continue from here to notice the client leaving.
/// - a long-poll: one answer (the commit's notifications, or empty at the deadline), after
///   which the connection serves requests as before.
final class PushConnection: ChannelDuplexHandler, RemovableChannelHandler, PushStreamSink, @unchecked Sendable {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private enum Mode {
        case serving
        case eventStream
        case longPoll(emptyAnswer: ByteBuffer, deadline: Scheduled<Void>?)
    }

    // Confined to the event loop.
    private var context: ChannelHandlerContext?
    /// An event stream's chunks are written here, at the front of the pipeline: they are framed
    /// once for all streams (`PushHub.chunk`), so each write skips the HTTP handlers and encoder.
    private var rawOutput: ChannelHandlerContext?
    private var mode = Mode.serving
    private var registration: (hub: PushHub, databaseID: Int64, onClose: (@Sendable () -> Void)?)?
    /// Numbers each parking, so a delivery meant for an earlier long-poll is not taken as the answer to the next.
    private var parking: UInt64 = 0
    /// A parked long-poll holds what arrives meanwhile (a pipelined request, the framework
    /// closing after `Connection: close`) until its answer is written.
    private var heldReads: [NIOAny] = []
    private var heldCloses: [(CloseMode, EventLoopPromise<Void>?)] = []

    let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    func handlerRemoved(context: ChannelHandlerContext) {
        unregister()
        self.context = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch mode {
        case .serving:
            if case .head(var head) = unwrapInboundIn(data), head.headerFields[.connection]?.lowercased() == "close",
               head.headerFields[.accept]?.contains("text/event-stream") == true {
                // The framework would otherwise wait with its task for a stream to end: an event
                // stream ends when either side closes it anyway.
                head.headerFields[.connection] = nil
                context.fireChannelRead(wrapInboundOut(.head(head)))
                return
            }
            context.fireChannelRead(data)
        case .eventStream: break  // the client has nothing more to say on a stream
        case .longPoll: heldReads.append(data)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard case .eventStream = mode else {
            context.fireChannelReadComplete()
            return
        }
        // The framework's reader is gone; keep reading here so a client leaving is noticed.
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if case .eventStream = mode, let event = event as? ChannelEvent, event == .inputClosed {
            context.close(promise: nil)
            return
        }
        context.fireUserInboundEventTriggered(event)
    }

    func channelInactive(context: ChannelHandlerContext) {
        unregister()
        context.fireChannelInactive()
    }

    // MARK: Outbound from the framework

    func close(context: ChannelHandlerContext, mode closeMode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch mode {
        case .serving:
            context.close(mode: closeMode, promise: promise)
        case .eventStream:
            // The framework letting go of the connection once its task ends; the stream lives on.
            promise?.succeed()
        case .longPoll:
            heldCloses.append((closeMode, promise))
        }
    }

    // MARK: Parking (on the event loop)

    /// Parks an event stream after its head: writes the opening comment and registers with `hub`.
    func parkEventStream(hub: PushHub, databaseID: Int64, after cursor: Int64, onOpen: () -> Void, onClose: @escaping @Sendable () -> Void) {
        guard let context, context.channel.isActive, case .serving = mode else { return }
        // The head went out through the HTTP encoder with `Transfer-Encoding: chunked` (the
        // framework answers as HTTP/1.1 and sets no length), so the body continues as chunks.
        let front = FrontOfPipeline()
        guard (try? context.pipeline.syncOperations.addHandler(front, position: .first)) != nil,
              let raw = try? context.pipeline.syncOperations.context(handler: front) else {
            context.close(promise: nil)
            return
        }
        rawOutput = raw
        raw.writeAndFlush(NIOAny(PushConnection.connectedBytes), promise: nil)
        parking += 1
        guard hub.register(self, parking: parking, databaseID: databaseID, after: cursor, answersOnce: false) else {
            finishEventStream(context)
            return
        }
        mode = .eventStream
        registration = (hub, databaseID, onClose)
        onOpen()
        // Ends the framework's task: its reader throws this once it has taken the request's end.
        context.fireErrorCaught(ConnectionParked())
        context.read()
    }

    /// What the framework's request loop reads once its connection became an event stream.
    struct ConnectionParked: Error {}

    /// Parks a long-poll after its head until the hub answers it or `timeout` passes.
    func parkLongPoll(hub: PushHub, databaseID: Int64, after cursor: Int64, timeout: TimeAmount, emptyAnswer: ByteBuffer) {
        guard let context, case .serving = mode else { return }
        parking += 1
        guard context.channel.isActive, hub.register(self, parking: parking, databaseID: databaseID, after: cursor, answersOnce: true) else {
            answer(emptyAnswer, context)
            return
        }
        registration = (hub, databaseID, nil)
        let deadline = context.eventLoop.assumeIsolatedUnsafeUnchecked().scheduleTask(in: timeout) { [self] in
            guard case .longPoll(let empty, _) = mode, let context = self.context else { return }
            answer(empty, context)
        }
        mode = .longPoll(emptyAnswer: emptyAnswer, deadline: deadline)
    }

    private static let connectedBytes = PushHub.chunk(ByteBuffer(string: ": connected\n\n"))
    private static let lastChunk = ByteBuffer(string: "0\r\n\r\n")

    // MARK: PushStreamSink (on the event loop)

    func deliver(_ bytes: ByteBuffer, parking: UInt64) {
        guard let context, parking == self.parking else { return }
        switch mode {
        case .serving: return
        case .eventStream:
            // A client that stopped reading (64 KB unsent) is dropped rather than buffered
            // without bound; it resumes from its `Last-Event-ID` when it reconnects.
            guard context.channel.isWritable, let rawOutput else {
                context.close(promise: nil)
                return
            }
            rawOutput.writeAndFlush(NIOAny(bytes), promise: nil)
        case .longPoll:
            answer(bytes, context)
        }
    }

    func finish(parking: UInt64) {
        guard let context, parking == self.parking else { return }
        switch mode {
        case .serving: return
        case .eventStream: finishEventStream(context)
        case .longPoll(let empty, _): answer(empty, context)
        }
    }

    private func finishEventStream(_ context: ChannelHandlerContext) {
        unregister()
        mode = .serving
        let channel = context.channel
        guard let rawOutput else {
            context.close(promise: nil)
            return
        }
        rawOutput.writeAndFlush(NIOAny(PushConnection.lastChunk)).whenComplete { _ in channel.close(promise: nil) }
    }

    /// Writes a long-poll's answer and returns the connection to serving requests.
    private func answer(_ bytes: ByteBuffer, _ context: ChannelHandlerContext) {
        if case .longPoll(_, let deadline) = mode { deadline?.cancel() }
        unregister()
        mode = .serving
        context.write(wrapOutboundOut(.body(bytes)), promise: nil)
        context.writeAndFlush(wrapOutboundOut(.end(nil)), promise: nil)
        let reads = heldReads, closes = heldCloses
        heldReads = []
        heldCloses = []
        for read in reads { context.fireChannelRead(read) }
        if !reads.isEmpty { context.fireChannelReadComplete() }
        for (closeMode, promise) in closes { context.close(mode: closeMode, promise: promise) }
    }

    private func unregister() {
        guard let registration else { return }
        self.registration = nil
        registration.hub.unregister(self, parking: parking, databaseID: registration.databaseID)
        registration.onClose?()
    }
}

/// Passes writes straight to the socket: the place in the pipeline a parked event stream writes
/// its pre-framed chunks from.
private final class FrontOfPipeline: ChannelOutboundHandler, RemovableChannelHandler, Sendable {
    typealias OutboundIn = ByteBuffer
}
