import NIOCore

/// What a connection the push hub may park is doing, as a value: each event on the connection
/// (a read, a close asked for, the hub's delivery, a deadline) changes the state and returns
/// what the channel handler must do (`PushConnection` performs it). No I/O here, so every
/// transition is unit-tested on its own.
///
///     serving ──park stream──> eventStream ──finish/hub closed──> closed
///        │  ^                       └──client leaves──> closed
///        │  └──────── end of response ──────────┐
///        └──park long-poll──> longPoll ──delivery──> answered ──next request / settle──> serving
///                               └──timeout/finish (empty answer, ended at once)──> serving
struct PushConnectionStateMachine {
    enum State: Equatable {
        /// The framework serves requests on the connection.
        case serving
        /// A parked event stream: the hub writes events until either side leaves.
        case eventStream
        /// A parked long-poll: answered once, by the hub or with `emptyAnswer` (its JSON body) at
        /// its deadline.
        case longPoll(emptyAnswer: ByteBuffer)
        /// A long-poll's whole answer is written; the end of its response has not yet passed the
        /// HTTP handlers (it does at the client's next request, or when the connection settles it).
        case answered
        case closed
    }

    private(set) var state = State.serving
    /// Numbers each parking, so a delivery meant for an earlier long-poll is not taken as the
    /// answer to the next.
    private(set) var parking: UInt64 = 0

    // MARK: Parking (the API answered a courier request; its head is written)

    enum ParkAction: Equatable {
        /// Not serving (already parked or closed): nothing to park.
        case ignore
        /// Write the stream's opening comment and register with the hub as `parking`.
        case openEventStream(parking: UInt64)
        /// Register with the hub as `parking`, answered once; start the deadline.
        case registerLongPoll(parking: UInt64)
    }

    mutating func parkEventStream() -> ParkAction {
        guard state == .serving else { return .ignore }
        parking += 1
        state = .eventStream
        return .openEventStream(parking: parking)
    }

    mutating func parkLongPoll(emptyAnswer: ByteBuffer) -> ParkAction {
        guard state == .serving else { return .ignore }
        parking += 1
        state = .longPoll(emptyAnswer: emptyAnswer)
        return .registerLongPoll(parking: parking)
    }

    // MARK: From the hub and the deadline

    enum DeliveryAction: Equatable {
        /// Meant for another parking, or the connection is not parked.
        case drop
        /// Write the notifications to the stream as events.
        case writeEvents
        /// The stream's client stopped reading: close rather than buffer without bound.
        case closeSlowClient
        /// Write the notifications as the long-poll's whole answer; the hub forgets it once its
        /// delivery is done. The end of the response follows at `settle` or the next request.
        case writeAnswer
    }

    mutating func delivered(parking delivery: UInt64, channelIsWritable: Bool) -> DeliveryAction {
        guard delivery == parking else { return .drop }
        switch state {
        case .eventStream: return channelIsWritable ? .writeEvents : .closeSlowClient
        case .longPoll:
            state = .answered
            return .writeAnswer
        case .serving, .answered, .closed: return .drop
        }
    }

    /// A heartbeat: written to an event stream like its events; nothing else takes one.
    func heartbeat(parking beat: UInt64, channelIsWritable: Bool) -> DeliveryAction {
        guard beat == parking, state == .eventStream else { return .drop }
        return channelIsWritable ? .writeEvents : .closeSlowClient
    }

    enum EndAction: Equatable {
        case none
        /// Unregister, write the stream's last chunk and close.
        case endEventStream
        /// Unregister, write `emptyAnswer` as the long-poll's answer and end its response, then
        /// release what was held.
        case answerEmpty(ByteBuffer)
    }

    /// The hub ends the parking (it is closing, or refused the registration).
    mutating func finished(parking ended: UInt64) -> EndAction {
        guard ended == parking else { return .none }
        switch state {
        case .eventStream:
            state = .closed
            return .endEventStream
        case .longPoll(let empty):
            state = .serving
            return .answerEmpty(empty)
        case .serving, .answered, .closed: return .none
        }
    }

    /// A long-poll's deadline passed.
    mutating func timedOut(parking expired: UInt64) -> EndAction {
        guard expired == parking, case .longPoll(let empty) = state else { return .none }
        state = .serving
        return .answerEmpty(empty)
    }

    /// The answered long-poll's settle time came (its answer's writes long done): true when its
    /// response must be ended now (write its end, release what was held).
    mutating func settle(parking settled: UInt64) -> Bool {
        guard settled == parking, state == .answered else { return false }
        state = .serving
        return true
    }

    // MARK: From the client and the framework

    enum ReadAction: Equatable {
        /// Pass it on to the framework.
        case forward
        /// A stream's client has nothing more to say.
        case discard
        /// Keep it until the parked long-poll's response ends.
        case hold
        /// Keep it, end the answered long-poll's response now, then release what was held.
        case holdAndEndResponse
    }

    mutating func read() -> ReadAction {
        switch state {
        case .serving: return .forward
        case .eventStream, .closed: return .discard
        case .longPoll: return .hold
        case .answered:
            state = .serving
            return .holdAndEndResponse
        }
    }

    /// True when the handler must ask for more reads itself: on a stream the framework's reader
    /// is gone, and reading is how a client leaving is noticed.
    var readsItself: Bool { state == .eventStream }

    enum CloseAction: Equatable {
        case close
        /// The framework letting go of a stream's connection once its task ends: the stream lives on.
        case succeedWithoutClosing
        /// Keep it until the parked long-poll's response ends (a `Connection: close` request).
        case hold
    }

    func closeRequested() -> CloseAction {
        switch state {
        case .serving, .closed: return .close
        case .eventStream: return .succeedWithoutClosing
        case .longPoll, .answered: return .hold
        }
    }

    /// The client closed its side: true when the handler must close the connection (a stream's:
    /// the framework no longer reads it); otherwise the framework decides.
    func inputClosed() -> Bool { state == .eventStream }

    /// The connection is gone: true when the handler still holds a registration with the hub.
    mutating func channelClosed() -> Bool {
        let parked: Bool
        switch state {
        case .eventStream, .longPoll: parked = true
        case .serving, .answered, .closed: parked = false
        }
        state = .closed
        return parked
    }
}
