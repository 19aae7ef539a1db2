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
        /// `emptyAnswer` is already a complete body (see `answer`).
        case longPoll(emptyAnswer: ByteBuffer)
    }

    // Confined to the event loop.
    private var context: ChannelHandlerContext?
    /// Parked answers are written here, at the front of the pipeline: they are framed once for
    /// all connections (`PushHub.chunk`), so each write skips the HTTP handlers and encoder.
    private var rawOutput: ChannelHandlerContext?
    private var front: FrontOfPipeline?
    /// A long-poll's body is written but the end of its response has not yet passed the HTTP
    /// handlers: what arrives meanwhile is held, as while parked.
    private var endPending = false
    private var mode = Mode.serving
    private var registration: (hub: PushHub, databaseID: Int64, onClose: (@Sendable () -> Void)?)?
    /// Numbers each parking, so a delivery meant for an earlier long-poll is not taken as the answer to the next.
    private var parking: UInt64 = 0
    /// A parked long-poll holds what arrives meanwhile (a pipelined request, the framework
    /// closing after `Connection: close`) until its answer is written.
    private var heldReads: [NIOAny] = []
    private var heldCloses: [(CloseMode, EventLoopPromise<Void>?)] = []
    /// The channel's writability, followed from its events: a delivery to thousands of streams
    /// reads this flag instead of asking each channel (a look at one more cold object per write).
    private var channelIsWritable = true

    let eventLoop: any EventLoop

    init(eventLoop: any EventLoop) {
        self.eventLoop = eventLoop
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    /// Also where a closed connection is noticed: Hummingbird's idle-timeout handler, before this
    /// one, does not pass `channelInactive` on.
    func handlerRemoved(context: ChannelHandlerContext) {
        unregister()
        // The channel is closed: whoever asked to close it while it was parked may stop waiting
        // (the framework's task awaits such a promise when its reader failed).
        let closes = heldCloses
        heldCloses = []
        heldReads = []
        for (_, promise) in closes { promise?.succeed() }
        self.context = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if endPending {
            // The client's next request, after a long-poll's answer: end that response now (the
            // hub's settle may still be waiting), then serve the request.
            heldReads.append(data)
            settle(context)
            return
        }
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

    func channelWritabilityChanged(context: ChannelHandlerContext) {
        channelIsWritable = context.channel.isWritable
        context.fireChannelWritabilityChanged()
    }

    func channelInactive(context: ChannelHandlerContext) {
        unregister()
        context.fireChannelInactive()
    }

    // MARK: Outbound from the framework

    func close(context: ChannelHandlerContext, mode closeMode: CloseMode, promise: EventLoopPromise<Void>?) {
        if endPending {
            heldCloses.append((closeMode, promise))
            return
        }
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
        guard let raw = frontOfPipeline(context) else {
            context.close(promise: nil)
            return
        }
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

    /// The head went out through the HTTP encoder with `Transfer-Encoding: chunked` (the
    /// framework answers as HTTP/1.1 and sets no length), so the body continues as chunks
    /// written from a handler placed at the front of the pipeline, once per connection.
    private func frontOfPipeline(_ context: ChannelHandlerContext) -> ChannelHandlerContext? {
        if let rawOutput { return rawOutput }
        let front = FrontOfPipeline()
        guard (try? context.pipeline.syncOperations.addHandler(front, position: .first)) != nil else { return nil }
        self.front = front
        rawOutput = try? context.pipeline.syncOperations.context(handler: front)
        return rawOutput
    }

    /// Parks a long-poll after its head until the hub answers it or `timeout` passes.
    func parkLongPoll(hub: PushHub, databaseID: Int64, after cursor: Int64, timeout: TimeAmount, emptyAnswer: ByteBuffer) {
        guard let context, case .serving = mode else { return }
        let empty = PushHub.completeBody(emptyAnswer)
        parking += 1
        guard frontOfPipeline(context) != nil else {
            context.close(promise: nil)
            return
        }
        guard context.channel.isActive, hub.register(self, parking: parking, databaseID: databaseID, after: cursor, answersOnce: true) else {
            mode = .longPoll(emptyAnswer: empty)
            answer(empty, context, settleNow: true)
            return
        }
        registration = (hub, databaseID, nil)
        mode = .longPoll(emptyAnswer: empty)
        // Not a scheduled task per poll: cancelling one searches the loop's whole timer heap.
        hub.pollDeadlines(on: context.eventLoop).add(self, parking: parking, deadline: .now() + timeout)
    }

    /// The long-poll parked as `parking` reached its deadline: answer it empty if still parked.
    func pollTimedOut(parking: UInt64) {
        guard parking == self.parking, case .longPoll(let empty) = mode, let context else { return }
        answer(empty, context, settleNow: true)
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
            guard channelIsWritable, let rawOutput else {
                context.close(promise: nil)
                return
            }
            rawOutput.writeAndFlush(NIOAny(bytes), promise: nil)
        case .longPoll:
            // The hub has already forgotten a long-poll it answers.
            registration = nil
            answer(bytes, context, settleNow: false)
        }
    }

    func finish(parking: UInt64) {
        guard let context, parking == self.parking else { return }
        switch mode {
        case .serving: return
        case .eventStream: finishEventStream(context)
        case .longPoll(let empty): answer(empty, context, settleNow: true)
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

    /// Writes a long-poll's answer: its whole remaining body (`PushHub.completeBody`), then at
    /// once or, for answers the hub delivers, later (`settle`: when the client sends its next
    /// request, or when the hub settles its writes, whichever comes first), the end of the
    /// response through the HTTP handlers, so the framework's idle timeout counts the response as
    /// finished (the encoder's duplicate last chunk is dropped).
    private func answer(_ body: ByteBuffer, _ context: ChannelHandlerContext, settleNow: Bool) {
        unregister()
        mode = .serving
        guard let rawOutput, let front else {
            context.close(promise: nil)
            return
        }
        rawOutput.writeAndFlush(NIOAny(body), promise: nil)
        front.dropNextWrite()
        endPending = true
        if settleNow { settle(context) }
    }

    func settle(parking: UInt64) {
        guard let context, parking == self.parking else { return }
        settle(context)
    }

    private func settle(_ context: ChannelHandlerContext) {
        guard endPending else { return }
        endPending = false
        // With a promise the encoder always writes once (an empty write when not chunked).
        context.write(wrapOutboundOut(.end(nil)), promise: context.eventLoop.makePromise())
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
private final class FrontOfPipeline: ChannelOutboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias OutboundIn = IOData

    /// Confined to the event loop.
    private var dropsLastChunk = false
    private static let lastChunk = ByteBuffer(string: "0\r\n\r\n")

    /// Drops the next write from the HTTP handlers if it is the last chunk (or empty): the
    /// response's end was already sent from here.
    func dropNextWrite() { dropsLastChunk = true }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if dropsLastChunk {
            dropsLastChunk = false
            if case .byteBuffer(let bytes) = unwrapOutboundIn(data), bytes.readableBytes == 0 || bytes == FrontOfPipeline.lastChunk {
                promise?.succeed()
                return
            }
        }
        context.write(data, promise: promise)
    }
}

/// The deadlines of the long-polls parked on one event loop, in 100 ms buckets checked by one
/// repeated task while any are pending. Confined to its loop.
final class PollDeadlines: @unchecked Sendable {
    private static let tickNanoseconds: UInt64 = 100_000_000
    private let loop: any EventLoop
    private var buckets: [UInt64: [(PushConnection, UInt64)]] = [:]
    private var ticking: RepeatedTask?

    init(loop: any EventLoop) { self.loop = loop }

    func add(_ connection: PushConnection, parking: UInt64, deadline: NIODeadline) {
        let tick = PollDeadlines.tickNanoseconds
        buckets[(deadline.uptimeNanoseconds + tick - 1) / tick, default: []].append((connection, parking))
        guard ticking == nil else { return }
        ticking = loop.scheduleRepeatedTask(initialDelay: .milliseconds(100), delay: .milliseconds(100)) { [self] _ in expire() }
    }

    private func expire() {
        let now = NIODeadline.now().uptimeNanoseconds / PollDeadlines.tickNanoseconds
        for key in buckets.keys where key <= now {
            for (connection, parking) in buckets.removeValue(forKey: key) ?? [] { connection.pollTimedOut(parking: parking) }
        }
        if buckets.isEmpty {
            ticking?.cancel()
            ticking = nil
        }
    }
}
