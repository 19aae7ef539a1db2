import NIOCore
import NIOPosix
import RecordStore
import Synchronization

/// A parked courier answer whose client is in the same process: what the push hub hands a
/// socket's connection (`PushConnection`), kept as values instead of framed for HTTP, so the
/// in-process API carries long-polls and event streams without sockets. Made by
/// `RecordAPI.parkInMemory`; each event goes through the same `PushConnectionStateMachine` as a
/// socket's. Push reaches it while the API's hub runs (`pushHub.run()`).
package final class InMemoryPushConnection: PushSink {
    /// What an event stream's client receives.
    package enum Event: Sendable, Equatable {
        /// One notification: its cursor (the event's `id:`) and payload (its `data:`).
        case notification(id: String, payload: [UInt8])
        /// A quiet stream's sign of life.
        case heartbeat
    }

    package let eventLoop: any EventLoop
    /// An event stream's events as they are delivered, until the hub ends the stream or the
    /// client disconnects.
    package let events: AsyncStream<Event>
    private let eventsInput: AsyncStream<Event>.Continuation
    /// A long-poll's answer body: the notifications' envelope, or the empty one at the deadline.
    private let answers: AsyncStream<[UInt8]>
    private let answersInput: AsyncStream<[UInt8]>.Continuation
    private let hub: PushHub
    private let databaseID: Int64

    private struct State {
        var machine = PushConnectionStateMachine()
        var deadline: Scheduled<Void>?
    }

    /// Changed on `eventLoop` only (as a socket connection's state is); locked so the compiler
    /// sees it safe without a loop-bound box.
    private let state = Mutex(State())

    init(eventLoop: any EventLoop, hub: PushHub, databaseID: Int64) {
        self.eventLoop = eventLoop
        self.hub = hub
        self.databaseID = databaseID
        (events, eventsInput) = AsyncStream.makeStream()
        (answers, answersInput) = AsyncStream.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// The long-poll's answer body, once the hub answers it or its deadline passes (empty if the
    /// connection is not a long-poll and disconnects, or the waiting task is cancelled).
    package func answer() async -> [UInt8] {
        for await body in answers { return body }
        return []
    }

    /// The client goes away: the hub forgets the connection and its streams end.
    package func disconnect() {
        eventLoop.execute { [self] in
            let (parked, parking) = state.withLock { state in
                state.deadline.take()?.cancel()
                return (state.machine.channelClosed(), state.machine.parking)
            }
            if parked { hub.unregister(self, parking: parking, databaseID: databaseID) }
            eventsInput.finish()
            answersInput.finish()
        }
    }

    /// On `eventLoop`: registers with the hub as `parking` says, as a socket's connection does
    /// after the response head.
    func park(_ parking: PushParking) {
        switch parking.kind {
        case .eventStream:
            guard case .openEventStream(let number) = state.withLock({ $0.machine.parkEventStream() }) else { return }
            if !hub.register(self, parking: number, databaseID: databaseID, after: parking.cursor, answersOnce: false) {
                finish(parking: number)
            }
        case .longPoll(let seconds, let empty):
            let action = state.withLock { $0.machine.parkLongPoll(emptyAnswer: ByteBuffer(bytes: empty)) }
            guard case .registerLongPoll(let number) = action else { return }
            guard hub.register(self, parking: number, databaseID: databaseID, after: parking.cursor, answersOnce: true) else {
                finish(parking: number)
                return
            }
            let deadline = eventLoop.scheduleTask(in: .seconds(Int64(seconds))) { [self] in
                end(state.withLock { $0.machine.timedOut(parking: number) })
            }
            state.withLock { $0.deadline = deadline }
        }
    }

    // MARK: From the hub (on `eventLoop`)

    package func deliver(_ share: PushShare, parking: UInt64) {
        switch state.withLock({ $0.machine.delivered(parking: parking, channelIsWritable: true) }) {
        case .drop, .closeSlowClient: return
        case .writeEvents:
            for notification in share.notifications {
                eventsInput.yield(.notification(id: NotificationCursor.encode(notification.id), payload: notification.payload))
            }
        case .writeAnswer:
            // An answer handed over in memory is whole at once: nothing to settle later.
            state.withLock { state in
                _ = state.machine.settle(parking: parking)
                return state.deadline.take()
            }?.cancel()
            answersInput.yield(Array(buffer: CourierAnswer.body(share)))
            answersInput.finish()
        }
    }

    package func heartbeat(_ frames: SharedFrames, parking: UInt64) {
        guard state.withLock({ $0.machine.heartbeat(parking: parking, channelIsWritable: true) }) == .writeEvents else { return }
        eventsInput.yield(.heartbeat)
    }

    package func finish(parking: UInt64) {
        end(state.withLock { $0.machine.finished(parking: parking) })
    }

    private func end(_ action: PushConnectionStateMachine.EndAction) {
        let parking = state.withLock { state in
            if action != .none { state.deadline.take()?.cancel() }
            return state.machine.parking
        }
        switch action {
        case .none: return
        case .endEventStream:
            hub.unregister(self, parking: parking, databaseID: databaseID)
            eventsInput.finish()
        case .answerEmpty(let empty):
            hub.unregister(self, parking: parking, databaseID: databaseID)
            answersInput.yield(Array(buffer: empty))
            answersInput.finish()
        }
    }
}

extension RecordAPI {
    /// Parks a courier answer (an `APIResponse` with `parking`) on a connection in memory, on an
    /// event loop of the process's shared group: the in-process API's push, for clients without
    /// a socket. Registered with the hub when this returns.
    package func parkInMemory(_ parking: PushParking) async -> InMemoryPushConnection {
        let loop = MultiThreadedEventLoopGroup.singleton.next()
        let connection = InMemoryPushConnection(eventLoop: loop, hub: pushHub, databaseID: parking.databaseID)
        try? await loop.submit { connection.park(parking) }.get()
        return connection
    }
}
