import HTTPTypes
import NIOCore
import NIOHTTPTypes
import RecordStore

/// The handler at the end of every HTTP connection's pipeline, just before the framework's
/// request handling. It passes everything through until the API answers a courier request;
/// then the response head has been written and `park…` registers the connection with the push
/// hub, which hands it notifications on the channel's event loop; this handler frames them and
/// writes the rest of the answer:
/// - an event stream: events and heartbeats (Server-Sent Events in HTTP chunks, see
///   `EventStreamFrames`) until either side leaves. The framework's task for the connection is
///   ended (its reader gets an error; the closes it then asks for are ignored), so an idle stream
///   holds no suspended task and none of the stack slabs its request reached; reads continue from
///   here to notice the client leaving.
/// - a long-poll: one answer (the commit's notifications, or empty at the deadline) as the body
///   of its response, which ends with it; the connection then serves requests as before.
/// What to do on each event is decided by `PushConnectionStateMachine`; this class performs it.
/// Confined to its channel's event loop; the hub reaches it through `ParkedConnection`.
final class PushConnection: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    private var machine = PushConnectionStateMachine()
    private var context: ChannelHandlerContext?
    /// Parked answers' chunks are written here, at the front of the pipeline: one framed share
    /// serves every connection of the loop handed it (`SharedFrames`), so each write skips the
    /// HTTP handlers and encoder. A long-poll's end of response goes through them.
    private var rawOutput: ChannelHandlerContext?
    private var front: FrontOfPipeline?
    /// What the hub knows this connection by; made at the first parking.
    private var parked: ParkedConnection?
    private var registration: (hub: PushHub, databaseID: Int64, onClose: (@Sendable () -> Void)?)?
    /// A parked long-poll holds what arrives meanwhile (a pipelined request, the framework
    /// closing after `Connection: close`) until its response ends.
    private var heldReads: [NIOAny] = []
    private var heldCloses: [(CloseMode, EventLoopPromise<Void>?)] = []
    /// The channel's writability, followed from its events: a delivery to thousands of streams
    /// reads this flag instead of asking each channel (a look at one more cold object per write).
    private var channelIsWritable = true
    private let deadlines: LongPollDeadlines

    init(deadlines: LongPollDeadlines) {
        self.deadlines = deadlines
    }

    func handlerAdded(context: ChannelHandlerContext) { self.context = context }

    /// Also where a closed connection is noticed: Hummingbird's idle-timeout handler, before this
    /// one, does not pass `channelInactive` on.
    func handlerRemoved(context: ChannelHandlerContext) {
        connectionClosed()
        // Whoever asked to close it while it was parked may stop waiting (the framework's task
        // awaits such a promise when its reader failed).
        let closes = heldCloses
        heldCloses = []
        heldReads = []
        for (_, promise) in closes { promise?.succeed() }
        self.context = nil
        // The hub's handle refers back to this handler: let both go.
        parked = nil
    }

    // MARK: Inbound

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch machine.read() {
        case .forward:
            if case .head(var head) = unwrapInboundIn(data), head.headerFields[.connection]?.lowercased() == "close",
               head.headerFields[.accept]?.contains("text/event-stream") == true {
                // The framework would otherwise wait with its task for a stream to end: an event
                // stream ends when either side closes it anyway.
                head.headerFields[.connection] = nil
                context.fireChannelRead(wrapInboundOut(.head(head)))
                return
            }
            context.fireChannelRead(data)
        case .discard: break
        case .hold: heldReads.append(data)
        case .holdAndEndResponse:
            // The client's next request, after a long-poll's answer: end that response now (its
            // settle may still be coming), then serve the request.
            heldReads.append(data)
            endResponse(context)
        }
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        guard machine.readsItself else {
            context.fireChannelReadComplete()
            return
        }
        context.read()
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed, machine.inputClosed() {
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
        connectionClosed()
        context.fireChannelInactive()
    }

    // MARK: Outbound from the framework

    func close(context: ChannelHandlerContext, mode: CloseMode, promise: EventLoopPromise<Void>?) {
        switch machine.closeRequested() {
        case .close: context.close(mode: mode, promise: promise)
        case .succeedWithoutClosing: promise?.succeed()
        case .hold: heldCloses.append((mode, promise))
        }
    }

    // MARK: Parking (on the event loop)

    /// Parks an event stream after its head: writes the opening comment and registers with `hub`.
    func parkEventStream(hub: PushHub, databaseID: Int64, after cursor: Int64, onOpen: () -> Void, onClose: @escaping @Sendable () -> Void) {
        guard let context, context.channel.isActive, case .openEventStream(let parking) = machine.parkEventStream() else { return }
        guard let raw = frontOfPipeline(context), let parked = handle(context) else {
            context.close(promise: nil)
            return
        }
        raw.writeAndFlush(NIOAny(EventStreamFrames.connected), promise: nil)
        guard hub.register(parked, parking: parking, databaseID: databaseID, after: cursor, answersOnce: false) else {
            finish(parking: parking)
            return
        }
        registration = (hub, databaseID, onClose)
        onOpen()
        // Ends the framework's task: its reader throws this once it has taken the request's end.
        context.fireErrorCaught(ConnectionParked())
        context.read()
    }

    /// What the framework's request loop reads once its connection became an event stream. An
    /// error, as there is no cleaner way to end that loop and keep the connection: Hummingbird's
    /// loop (`HTTPChannelHandler.handleHTTP`) ends on an error or, when its requests end, waits
    /// for the channel to close, which would hold a task for every open stream; and the loop
    /// cannot be replaced by one of ours, as a `Request` over a connection's body is made only by
    /// the framework. The framework logs it at trace level and asks for a close, which is ignored.
    struct ConnectionParked: Error {}

    /// Parks a long-poll after its head until the hub answers it or `timeout` passes;
    /// `emptyAnswer` is the body it is then answered with.
    func parkLongPoll(hub: PushHub, databaseID: Int64, after cursor: Int64, timeout: TimeAmount, emptyAnswer: ByteBuffer) {
        guard let context, case .registerLongPoll(let parking) = machine.parkLongPoll(emptyAnswer: emptyAnswer) else {
            return
        }
        guard frontOfPipeline(context) != nil, let parked = handle(context) else {
            context.close(promise: nil)
            return
        }
        guard context.channel.isActive, hub.register(parked, parking: parking, databaseID: databaseID, after: cursor, answersOnce: true) else {
            finish(parking: parking)
            return
        }
        registration = (hub, databaseID, nil)
        // Not a scheduled task per poll: cancelling one searches the loop's whole timer heap.
        deadlines.add(parked, parking: parking, deadline: .now() + timeout)
    }

    /// The long-poll parked as `parking` reached its deadline: answer it empty if still parked,
    /// or end its answered response (its settle time).
    func pollTimedOut(parking: UInt64) {
        guard let context else { return }
        if machine.settle(parking: parking) {
            endResponse(context)
            return
        }
        perform(machine.timedOut(parking: parking))
    }

    /// A parked answer's head went out through the HTTP encoder with `Transfer-Encoding: chunked`
    /// (the framework answers as HTTP/1.1 and sets no length), so its body continues as chunks
    /// written from a handler placed at the front of the pipeline, once per connection.
    private func frontOfPipeline(_ context: ChannelHandlerContext) -> ChannelHandlerContext? {
        if let rawOutput { return rawOutput }
        let front = FrontOfPipeline()
        guard (try? context.pipeline.syncOperations.addHandler(front, position: .first)) != nil else { return nil }
        self.front = front
        rawOutput = try? context.pipeline.syncOperations.context(handler: front)
        return rawOutput
    }

    private func handle(_ context: ChannelHandlerContext) -> ParkedConnection? {
        if let parked { return parked }
        parked = ParkedConnection(NIOLoopBound(self, eventLoop: context.eventLoop))
        return parked
    }

    // MARK: From the hub (on the event loop, through `ParkedConnection`)

    func deliver(_ share: PushShare, parking: UInt64) {
        guard let context else { return }
        switch machine.delivered(parking: parking, channelIsWritable: channelIsWritable) {
        case .drop: return
        case .writeEvents: rawOutput?.writeAndFlush(NIOAny(EventStreamFrames.events(share)), promise: nil)
        case .closeSlowClient: closeSlowClient(context)
        case .writeAnswer:
            // The hub forgets a long-poll it answers.
            registration = nil
            writeAnswer(LongPollFrames.answer(share), context)
            if let parked { deadlines.add(parked, parking: machine.parking, deadline: .now() + PushConnection.settleDelay) }
        }
    }

    func heartbeat(_ frames: SharedFrames, parking: UInt64) {
        guard let context else { return }
        switch machine.heartbeat(parking: parking, channelIsWritable: channelIsWritable) {
        case .writeEvents: rawOutput?.writeAndFlush(NIOAny(EventStreamFrames.heartbeat(frames)), promise: nil)
        case .closeSlowClient: closeSlowClient(context)
        case .drop, .writeAnswer: return
        }
    }

    func finish(parking: UInt64) {
        perform(machine.finished(parking: parking))
    }

    /// 64 KB unsent: the client resumes from its `Last-Event-ID` when it reconnects.
    private func closeSlowClient(_ context: ChannelHandlerContext) {
        context.close(promise: nil)
    }

    private func perform(_ action: PushConnectionStateMachine.EndAction) {
        guard let context else { return }
        switch action {
        case .none: return
        case .endEventStream:
            unregister()
            let channel = context.channel
            guard let rawOutput else {
                context.close(promise: nil)
                return
            }
            rawOutput.writeAndFlush(NIOAny(EventStreamFrames.lastChunk)).whenComplete { _ in channel.close(promise: nil) }
        case .answerEmpty(let empty):
            unregister()
            writeAnswer(LongPollFrames.whole(empty), context)
            endResponse(context)
        }
    }

    /// How long an answered long-poll's response stays open below the framework: its answer, the
    /// last chunk included, went out from the front of the pipeline; the end of the response
    /// through the HTTP handlers (the framework's bookkeeping, resuming its task for the
    /// connection) waits until the client's next request or this long, so a commit's fan-out
    /// writes every answer before any of that work. Ending each at once made 1,000 long-polls'
    /// last answer about twice as late (see BENCHMARKS.md, long-poll fan-out).
    static let settleDelay = TimeAmount.milliseconds(100)

    /// Writes a long-poll's whole remaining body, its last chunk included, from the front of the
    /// pipeline (one buffer for all the long-polls of a loop handed the same share: through the
    /// HTTP encoder each answer was framed anew, and 1,000 answers took 2-3 times as long). The
    /// end of the response follows through the HTTP handlers (`endResponse`), whose duplicate
    /// last chunk the front of the pipeline drops.
    private func writeAnswer(_ body: ByteBuffer, _ context: ChannelHandlerContext) {
        guard let rawOutput, let front else {
            context.close(promise: nil)
            return
        }
        rawOutput.writeAndFlush(NIOAny(body), promise: nil)
        front.dropNextWrite()
    }

    /// Ends the answered long-poll's response through the HTTP handlers, so the framework sees it
    /// finish (its idle timeout, its next request), then releases what arrived meanwhile.
    private func endResponse(_ context: ChannelHandlerContext) {
        // With a promise the encoder always writes once (an empty write when not chunked).
        context.write(wrapOutboundOut(.end(nil)), promise: context.eventLoop.makePromise())
        let reads = heldReads, closes = heldCloses
        heldReads = []
        heldCloses = []
        for read in reads { context.fireChannelRead(read) }
        if !reads.isEmpty { context.fireChannelReadComplete() }
        for (closeMode, promise) in closes { context.close(mode: closeMode, promise: promise) }
    }

    private func connectionClosed() {
        if machine.channelClosed() { unregister() }
    }

    private func unregister() {
        guard let registration, let parked else { return }
        self.registration = nil
        registration.hub.unregister(parked, parking: machine.parking, databaseID: registration.databaseID)
        registration.onClose?()
    }
}

/// How the push hub, on any thread, knows a parked connection: its event loop and, usable only
/// there, its handler. One per connection, made at its first parking.
final class ParkedConnection: PushSink, LongPollDeadlineTarget {
    private let connection: NIOLoopBound<PushConnection>

    init(_ connection: NIOLoopBound<PushConnection>) { self.connection = connection }

    var eventLoop: any EventLoop { connection.eventLoop }

    func deliver(_ share: PushShare, parking: UInt64) { connection.value.deliver(share, parking: parking) }
    func heartbeat(_ frames: SharedFrames, parking: UInt64) { connection.value.heartbeat(frames, parking: parking) }
    func finish(parking: UInt64) { connection.value.finish(parking: parking) }
    func pollTimedOut(parking: UInt64) { connection.value.pollTimedOut(parking: parking) }
}

/// Passes writes straight to the socket: the place in the pipeline a parked connection writes
/// its chunks from.
private final class FrontOfPipeline: ChannelOutboundHandler, RemovableChannelHandler {
    typealias OutboundIn = IOData

    private var dropsLastChunk = false

    /// Drops the next write from the HTTP handlers if it is the last chunk (or empty): the
    /// response's end was already sent from here.
    func dropNextWrite() { dropsLastChunk = true }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if dropsLastChunk {
            dropsLastChunk = false
            if case .byteBuffer(let bytes) = unwrapOutboundIn(data), bytes.readableBytes == 0 || bytes == EventStreamFrames.lastChunk {
                promise?.succeed()
                return
            }
        }
        context.write(data, promise: promise)
    }
}

/// A long-poll's answer as this connection writes it below the HTTP encoder: the JSON answer as
/// one chunk and the last chunk, made once for all the long-polls handed the share.
enum LongPollFrames {
    static func answer(_ share: PushShare) -> ByteBuffer {
        share.frames.frame(LongPollFrames.self) { whole(CourierAnswer.body(share)) }
    }

    /// `body` as a whole chunked body: one chunk, then the last chunk.
    static func whole(_ body: ByteBuffer) -> ByteBuffer {
        var framed = EventStreamFrames.chunk(body)
        framed.writeImmutableBuffer(EventStreamFrames.lastChunk)
        return framed
    }
}

/// An event stream's body as this connection writes it below the HTTP encoder: Server-Sent
/// Events framed as `Transfer-Encoding: chunked` chunks, and the last chunk that ends it.
enum EventStreamFrames {
    /// The first bytes of every stream: its client sees it open before any event.
    static let connected = chunk(ByteBuffer(string: ": connected\n\n"))
    static let lastChunk = ByteBuffer(string: "0\r\n\r\n")

    /// `share`'s notifications as events, each with its cursor as `id:`, in one chunk: made once
    /// for all the streams handed the share. Events have no `event:` name, so they are plain
    /// `message` events an `EventSource`'s `onmessage` sees.
    static func events(_ share: PushShare) -> ByteBuffer {
        share.frames.frame(EventStreamFrames.self) {
            var events = ByteBuffer()
            events.reserveCapacity(share.notifications.reduce(0) { $0 + $1.payload.count + 40 })
            for notification in share.notifications {
                events.writeString("id: ")
                events.writeString(NotificationCursor.encode(notification.id))
                events.writeString("\ndata: ")
                events.writeBytes(notification.payload)
                events.writeString("\n\n")
            }
            return chunk(events)
        }
    }

    /// A comment that keeps an idle stream alive, made once for the streams of one loop's job.
    static func heartbeat(_ frames: SharedFrames) -> ByteBuffer {
        frames.frame(EventStreamFrames.self) { chunk(ByteBuffer(string: ": heartbeat\n\n")) }
    }

    /// `payload` as one chunk of a `Transfer-Encoding: chunked` body.
    static func chunk(_ payload: ByteBuffer) -> ByteBuffer {
        var framed = ByteBuffer()
        framed.reserveCapacity(payload.readableBytes + 12)
        framed.writeString(String(payload.readableBytes, radix: 16))
        framed.writeString("\r\n")
        framed.writeImmutableBuffer(payload)
        framed.writeString("\r\n")
        return framed
    }
}
