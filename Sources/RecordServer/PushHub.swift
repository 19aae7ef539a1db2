import Foundation
import NIOCore
import RecordStore
import Synchronization

/// Where the hub writes one event stream's bytes: a connection parked on its event loop (see
/// `EventStreamConnection`). The hub calls these on `eventLoop` only.
package protocol PushStreamSink: AnyObject, Sendable {
    var eventLoop: any EventLoop { get }
    /// Writes events (or a heartbeat comment, or a long-poll's answer) to the client, if it is
    /// still parked as `parking` (the number it registered with).
    func deliver(_ bytes: ByteBuffer, parking: UInt64)
    /// Ends the stream, or answers the long-poll empty (the daemon is shutting down).
    func finish(parking: UInt64)
    /// After a batch of deliveries on this loop: bookkeeping a delivery left for later, so the
    /// batch's writes reach the clients first.
    func settle(parking: UInt64)
}

/// Wakes waiting deliveries (long-polls and event streams) when a commit lands. Nothing polls
/// the database on a timer: a waiter sleeps until a commit of its database wakes it, and one read
/// per wake serves every waiter of that database.
///
/// Event streams are not waiting tasks: they are registrations the hub writes to on their
/// connection's event loop. A commit is read once, encoded once per distinct cursor (usually
/// once), and handed to each event loop in one job that writes the same bytes to all of its
/// streams, so 10,000 idle streams hold no suspended tasks and a wake costs no task hops.
package final class PushHub: Sendable {
    /// What a wait returns: the notifications after the waiter's cursor and the commit generation
    /// they reflect (nil when the batch was cut at the limit, so the next wait must read again).
    package struct Delivery: Sendable {
        package var notifications: [StoredNotification]
        package var generation: Int?
    }

    static let batchLimit = 500

    private struct Waiter {
        var cursor: Int64
        var continuation: CheckedContinuation<Delivery, Never>
    }

    /// One event stream: its sink and how far it has been sent. `cursor` and `quietBeats` are read
    /// and written only by the wake task (after registration publishes them through the state lock).
    private final class StreamRegistration: @unchecked Sendable {
        let sink: any PushStreamSink
        /// The sink's loop, kept here so that sorting a delivery's writes by loop does not touch
        /// every connection (10,000 cold objects on the pass before the first write).
        let eventLoop: any EventLoop
        let parking: UInt64
        /// A long-poll: answered once (a JSON answer), then forgotten.
        let answersOnce: Bool
        var cursor: Int64
        /// Heartbeat ticks since the hub last wrote to this stream (see `sendHeartbeats`).
        var quietBeats = 0
        init(sink: any PushStreamSink, parking: UInt64, answersOnce: Bool, cursor: Int64) {
            self.sink = sink
            self.eventLoop = sink.eventLoop
            self.parking = parking
            self.answersOnce = answersOnce
            self.cursor = cursor
        }
    }

    private struct State {
        var waiters: [Int64: [UUID: Waiter]] = [:]
        var streams: [Int64: [ObjectIdentifier: StreamRegistration]] = [:]
        /// Databases with a commit not yet handled by the wake task.
        var pendingWakes: Set<Int64> = []
        /// A heartbeat tick not yet handled by the wake task.
        var heartbeatDue = false
        /// Streams registered since the wake task last looked, by database: each is sent what is
        /// already pending after its cursor (a catch-up of the new streams only, not a wake of
        /// every stream of the database: 10,000 streams opening were 10,000 wakes of all of them).
        var pendingCatchUps: [Int64: [StreamRegistration]] = [:]
        /// Per database, how many commits have landed; lets a waiter skip its read when nothing
        /// happened since its last delivery.
        var generations: [Int64: Int] = [:]
        var closed = false
        var wakeTask: Task<Void, Never>?
        var heartbeatTask: Task<Void, Never>?
        var pollDeadlines: [ObjectIdentifier: PollDeadlines] = [:]

        /// Whether `stream` is still its connection's registration (not gone, not replaced by a
        /// newer parking of the same connection).
        func isCurrent(_ stream: StreamRegistration, databaseID: Int64) -> Bool {
            streams[databaseID]?[ObjectIdentifier(stream.sink)] === stream
        }
    }

    private let store: any RecordStorage
    private let state = Mutex(State())
    /// Monotonic nanoseconds (`DispatchTime.uptimeNanoseconds`) when the last commit reached the
    /// hub and when the last delivery (an event written to a stream, a long-poll answer handed to
    /// the server) finished: their difference is the server's own fan-out time for one commit, so
    /// the bench can tell it from its client's reading time.
    private let lastCommitNanoseconds = Atomic<UInt64>(0)
    private let lastDeliveryNanoseconds = Atomic<UInt64>(0)
    /// Nudges the wake task, which handles `pendingWakes` one database at a time, in order: a wake
    /// that reads before a later commit puts its waiters back before that commit's wake takes
    /// them. Nudges coalesce (the task takes every pending database at once).
    private let wakeSignal: AsyncStream<Void>.Continuation
    /// An event stream that had nothing written to it for up to this long gets a comment, so
    /// clients and proxies see it alive (see `startHeartbeats`).
    private let heartbeatInterval: Duration

    package init(store: any RecordStorage, heartbeatInterval: Duration = .seconds(10)) {
        self.store = store
        self.heartbeatInterval = heartbeatInterval
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        self.wakeSignal = continuation
        let wakeTask = Task { [weak self] in
            for await _ in stream {
                guard let self else { return }
                while let (databaseIDs, catchUps, heartbeatDue) = self.takePendingWakes() {
                    for databaseID in databaseIDs.sorted() { await self.wake(databaseID) }
                    // A database just woken has sent its new streams whatever was pending.
                    for (databaseID, registrations) in catchUps where !databaseIDs.contains(databaseID) {
                        await self.catchUp(databaseID, registrations)
                    }
                    if heartbeatDue { self.sendHeartbeats() }
                }
            }
        }
        state.withLock { $0.wakeTask = wakeTask }
    }

    deinit { wakeSignal.finish() }

    package var isClosed: Bool { state.withLock { $0.closed } }

    /// How many deliveries are waiting right now, long-polls and event streams (for metrics and tests).
    package var waiterCount: Int {
        state.withLock { state in
            state.waiters.values.reduce(0) { $0 + $1.count } + state.streams.values.reduce(0) { $0 + $1.count }
        }
    }

    /// Called by the store after every commit.
    package func commitLanded(_ databaseIDs: Set<Int64>) {
        lastCommitNanoseconds.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        requestWakes(databaseIDs)
    }

    private func requestWakes(_ databaseIDs: Set<Int64>) {
        state.withLock { $0.pendingWakes.formUnion(databaseIDs) }
        wakeSignal.yield()
    }

    private func takePendingWakes() -> (Set<Int64>, [Int64: [StreamRegistration]], heartbeatDue: Bool)? {
        state.withLock { state in
            guard !state.pendingWakes.isEmpty || !state.pendingCatchUps.isEmpty || state.heartbeatDue else { return nil }
            defer {
                state.pendingWakes.removeAll(keepingCapacity: true)
                state.pendingCatchUps.removeAll()
                state.heartbeatDue = false
            }
            return (state.pendingWakes, state.pendingCatchUps, state.heartbeatDue)
        }
    }

    /// Parks a connection of `databaseID` whose client has seen everything up to `cursor`: an
    /// event stream, or with `answersOnce` a long-poll. What is already pending after `cursor`
    /// is sent at once (by a wake of its database); from then on every commit with something
    /// for it. `parking` is passed back with every delivery. False when the hub has closed.
    package func register(_ sink: any PushStreamSink, parking: UInt64, databaseID: Int64, after cursor: Int64, answersOnce: Bool) -> Bool {
        let registered = state.withLock { state -> Bool in
            if state.closed { return false }
            let registration = StreamRegistration(sink: sink, parking: parking, answersOnce: answersOnce, cursor: cursor)
            state.streams[databaseID, default: [:]][ObjectIdentifier(sink)] = registration
            state.pendingCatchUps[databaseID, default: []].append(registration)
            if state.heartbeatTask == nil { state.heartbeatTask = startHeartbeats() }
            return true
        }
        if registered { wakeSignal.yield() }
        return registered
    }

    /// The long-poll deadlines of connections on `loop` (one timer for them all).
    func pollDeadlines(on loop: any EventLoop) -> PollDeadlines {
        state.withLock { state in
            if let known = state.pollDeadlines[ObjectIdentifier(loop)] { return known }
            let deadlines = PollDeadlines(loop: loop)
            state.pollDeadlines[ObjectIdentifier(loop)] = deadlines
            return deadlines
        }
    }

    /// Forgets a parked connection (its client has gone, or its long-poll was answered).
    package func unregister(_ sink: any PushStreamSink, parking: UInt64, databaseID: Int64) {
        state.withLock { state in
            let key = ObjectIdentifier(sink)
            guard state.streams[databaseID]?[key]?.parking == parking else { return }
            state.streams[databaseID]?.removeValue(forKey: key)
            if state.streams[databaseID]?.isEmpty == true { state.streams.removeValue(forKey: databaseID) }
        }
    }

    private static let heartbeatBytes = PushHub.chunk(ByteBuffer(string: ": heartbeat\n\n"))

    /// One task for all streams ticks at half the interval; the wake task, which owns the
    /// streams' bookkeeping, then writes the comment to each stream that had nothing written to
    /// it for two ticks, so an idle stream hears from the daemon at least every interval (the
    /// contract asks for 15 s; the interval is 10) and a busy one never gets a heartbeat: 10,000
    /// comments at a tick took the event loops as long as a commit's 10,000 events, and a commit
    /// landing just then waited for them.
    private func startHeartbeats() -> Task<Void, Never> {
        let tick = heartbeatInterval / 2
        return Task { [weak self] in
            while !Task.isCancelled {
                try? await Task.sleep(for: tick)
                guard let self, !self.isClosed else { return }
                self.state.withLock { $0.heartbeatDue = true }
                self.wakeSignal.yield()
            }
        }
    }

    /// On the wake task: the comment to every event stream quiet for two ticks.
    private func sendHeartbeats() {
        let streams = state.withLock { state in state.streams.values.flatMap { $0.values.filter { !$0.answersOnce } } }
        var batches = LoopBatches()
        for stream in streams {
            stream.quietBeats += 1
            guard stream.quietBeats >= 2 else { continue }
            stream.quietBeats = 0
            batches.append((stream, 0))
        }
        if !batches.isEmpty { PushHub.writeOnTheirLoops(batches, shares: [PushHub.heartbeatBytes], then: nil) }
    }

    /// Writes sorted into their event loops' batches as they are made: a handful of loops, found
    /// by identity starting from the last one used (not a hashed look-up per write). A write holds
    /// the stream's registration, which the pass has just read, not its connection: the loop
    /// reaches the connection when it writes.
    private struct LoopBatches {
        typealias Write = (stream: StreamRegistration, share: Int)
        private(set) var loops: [(loop: any EventLoop, writes: [Write])] = []
        private var last = 0

        var isEmpty: Bool { loops.isEmpty }

        mutating func append(_ write: Write) {
            let loop = write.stream.eventLoop
            if last >= loops.count || loops[last].loop !== loop {
                if let index = loops.firstIndex(where: { $0.loop === loop }) {
                    last = index
                } else {
                    loops.append((loop, []))
                    last = loops.count - 1
                }
            }
            loops[last].writes.append(write)
        }
    }

    /// Hands each loop one job for its writes (not one per stream). A write names its bytes by
    /// index in `shares`; each loop gets its own copy of them: thousands of writes retaining one
    /// buffer from two threads would fight over its reference count. `then` runs on each loop
    /// after its writes. Once every loop has written, each settles its connections (bookkeeping
    /// that is not on the way to any client, so one loop's does not slow another's writes), and
    /// `afterAll` runs.
    private static func writeOnTheirLoops(_ batches: LoopBatches, shares: [ByteBuffer], then done: (@Sendable () -> Void)?,
                                          afterAll: (@Sendable () -> Void)? = nil) {
        let loops = batches.loops
        let unfinished = Atomic(loops.count)
        let settleAll: @Sendable () -> Void = {
            for (loop, batch) in loops {
                loop.execute { for write in batch { write.stream.sink.settle(parking: write.stream.parking) } }
            }
            afterAll?()
        }
        for (loop, batch) in loops {
            let local = loops.count > 1 ? shares.map { ByteBuffer(bytes: $0.readableBytesView) } : shares
            loop.execute {
                for write in batch { write.stream.sink.deliver(local[write.share], parking: write.stream.parking) }
                done?()
                if unfinished.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { settleAll() }
            }
        }
    }

    /// The bytes of `notifications` as events, each with its cursor as `id:`, framed as one
    /// HTTP/1.1 chunk (event streams are written below the HTTP encoder, see `PushConnection`).
    /// Events have no `event:` name, so they are plain `message` events an `EventSource`'s
    /// `onmessage` sees.
    package static func encodeEvents(_ notifications: [StoredNotification]) -> ByteBuffer {
        var buffer = ByteBuffer()
        buffer.reserveCapacity(notifications.reduce(0) { $0 + $1.payload.count + 40 })
        for notification in notifications {
            buffer.writeString("id: ")
            buffer.writeString(NotificationCursor.encode(notification.id))
            buffer.writeString("\ndata: ")
            buffer.writeBytes(notification.payload)
            buffer.writeString("\n\n")
        }
        return chunk(buffer)
    }

    /// `payload` as the whole of a `Transfer-Encoding: chunked` body: one chunk and the last chunk.
    package static func completeBody(_ payload: ByteBuffer) -> ByteBuffer {
        var framed = chunk(payload)
        framed.writeString("0\r\n\r\n")
        return framed
    }

    /// `payload` as one chunk of a `Transfer-Encoding: chunked` body.
    package static func chunk(_ payload: ByteBuffer) -> ByteBuffer {
        var framed = ByteBuffer()
        framed.reserveCapacity(payload.readableBytes + 12)
        framed.writeString(String(payload.readableBytes, radix: 16))
        framed.writeString("\r\n")
        framed.writeImmutableBuffer(payload)
        framed.writeString("\r\n")
        return framed
    }

    /// Called after a delivery of notifications has been written (not for heartbeats or empty answers).
    package func deliveryWritten() {
        lastDeliveryNanoseconds.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
    }

    /// Seconds from the last commit to the last delivery written after it (0 when none followed it).
    package var lastCommitToLastDeliverySeconds: Double {
        let commit = lastCommitNanoseconds.load(ordering: .relaxed)
        let delivery = lastDeliveryNanoseconds.load(ordering: .relaxed)
        return delivery > commit ? Double(delivery - commit) / 1e9 : 0
    }

    private func wake(_ databaseID: Int64) async {
        let (generation, taken, streams) = state.withLock { state -> (Int, [UUID: Waiter], [StreamRegistration]) in
            let generation = (state.generations[databaseID] ?? 0) + 1
            state.generations[databaseID] = generation
            return (generation, state.waiters.removeValue(forKey: databaseID) ?? [:], state.streams[databaseID].map { Array($0.values) } ?? [])
        }
        // The lowest cursor by a plain pass: thousands of streams, usually all at one cursor
        // (a set of them cost more than the rest of the wake before the writes).
        guard !taken.isEmpty || !streams.isEmpty else { return }
        var lowest = Int64.max
        for waiter in taken.values where waiter.cursor < lowest { lowest = waiter.cursor }
        for stream in streams where stream.cursor < lowest { lowest = stream.cursor }
        let batch = (try? await store.notifications(databaseID: databaseID, after: lowest, limit: PushHub.batchLimit)) ?? []
        let complete = batch.count < PushHub.batchLimit
        // A full batch read from the lowest cursor may end before a waiter further ahead: such a
        // waiter gets its own read (one per distinct cursor), so it is not left asleep with
        // notifications pending.
        var aheadReads: [Int64: [StoredNotification]] = [:]
        if !complete, let last = batch.last?.id {
            var cursors = Set(taken.values.map(\.cursor))
            for stream in streams { cursors.insert(stream.cursor) }
            for cursor in cursors where cursor >= last {
                aheadReads[cursor] = (try? await store.notifications(databaseID: databaseID, after: cursor, limit: PushHub.batchLimit)) ?? []
            }
        }
        let ready = state.withLock { state -> [(Waiter, [StoredNotification])] in
            var ready: [(Waiter, [StoredNotification])] = []
            for (id, waiter) in taken {
                let mine = aheadReads[waiter.cursor] ?? batch.filter { $0.id > waiter.cursor }
                if mine.isEmpty && !state.closed {
                    // The commit fired nothing for this waiter: keep waiting (its timeout still runs).
                    state.waiters[databaseID, default: [:]][id] = waiter
                } else {
                    ready.append((waiter, mine))
                }
            }
            return ready
        }
        for (waiter, mine) in ready {
            waiter.continuation.resume(returning: Delivery(notifications: mine, generation: complete ? generation : nil))
        }
        deliver(to: streams, batch: batch, aheadReads: aheadReads, complete: complete, databaseID: databaseID)
    }

    /// Sends streams registered since the last look what is already pending after their cursors
    /// (those still registered: one may have gone, or parked again under a newer registration).
    private func catchUp(_ databaseID: Int64, _ registrations: [StreamRegistration]) async {
        let streams = state.withLock { state in
            registrations.filter { state.isCurrent($0, databaseID: databaseID) }
        }
        guard let lowest = streams.lazy.map(\.cursor).min() else { return }
        let batch = (try? await store.notifications(databaseID: databaseID, after: lowest, limit: PushHub.batchLimit)) ?? []
        guard !batch.isEmpty else { return }
        // A read cut at the limit: the full wake reads on per cursor.
        guard batch.count < PushHub.batchLimit else {
            requestWakes([databaseID])
            return
        }
        deliver(to: streams, batch: batch, aheadReads: [:], complete: true, databaseID: databaseID)
    }

    /// Encodes each distinct cursor's share once and writes it to every stream at that cursor.
    /// This pass runs before any write goes out, once per stream: it looks up the share only when
    /// the cursor changes from the stream before (usually all streams share one) and sorts the
    /// writes into their loops' batches as it goes.
    private func deliver(to streams: [StreamRegistration], batch: [StoredNotification], aheadReads: [Int64: [StoredNotification]],
                         complete: Bool, databaseID: Int64) {
        guard !streams.isEmpty, !batch.isEmpty || !aheadReads.isEmpty else { return }
        struct ShareKey: Hashable {
            var cursor: Int64
            var answersOnce: Bool
        }
        var encoded: [ShareKey: (index: Int, last: Int64)?] = [:]
        var shares: [ByteBuffer] = []
        var batches = LoopBatches()
        var answered: [StreamRegistration] = []
        var previous: (key: ShareKey, share: (index: Int, last: Int64)?)?
        for stream in streams {
            let key = ShareKey(cursor: stream.cursor, answersOnce: stream.answersOnce)
            let share: (index: Int, last: Int64)?
            if let previous, previous.key == key {
                share = previous.share
            } else if let known = encoded[key] {
                share = known
            } else {
                let mine = aheadReads[stream.cursor] ?? batch.filter { $0.id > stream.cursor }
                share = mine.last.map { last in
                    shares.append(stream.answersOnce
                        ? PushHub.completeBody(ByteBuffer(bytes: RecordAPI.notificationsAnswer(mine, cursor: stream.cursor).serialized()))
                        : PushHub.encodeEvents(mine))
                    return (shares.count - 1, last.id)
                }
                encoded[key] = share
            }
            previous = (key, share)
            guard let share else { continue }
            stream.cursor = share.last
            stream.quietBeats = 0
            batches.append((stream, share.index))
            if stream.answersOnce { answered.append(stream) }
        }
        guard !batches.isEmpty else { return }
        // A long-poll is answered once: it is forgotten once every loop has written (not
        // meanwhile, taking a core from the writes). A wake in between that still finds it
        // delivers nothing (the connection takes no delivery once answered); a connection that
        // has meanwhile parked again has a new registration, which stays.
        var forgetAnswered: (@Sendable () -> Void)?
        if !answered.isEmpty {
            let answeredNow = answered
            forgetAnswered = { [weak self] in
                self?.state.withLock { state in
                    for stream in answeredNow where state.isCurrent(stream, databaseID: databaseID) {
                        state.streams[databaseID]?.removeValue(forKey: ObjectIdentifier(stream.sink))
                    }
                }
            }
        }
        PushHub.writeOnTheirLoops(batches, shares: shares, then: { [weak self] in self?.deliveryWritten() }, afterAll: forgetAnswered)
        // A stream cut at the batch limit has more waiting: read on for it.
        if !complete || aheadReads.values.contains(where: { $0.count >= PushHub.batchLimit }) { requestWakes([databaseID]) }
    }

    /// Waits until there are notifications after `cursor`, or `timeout` passes (empty result),
    /// or the hub closes. `knownGeneration` is the generation of the caller's previous delivery.
    package func wait(databaseID: Int64, after cursor: Int64, knownGeneration: Int?, timeout: Duration) async -> Delivery {
        let id = UUID()
        return await withCheckedContinuation { continuation in
            let current = state.withLock { state -> Int? in
                if state.closed { return nil }
                state.waiters[databaseID, default: [:]][id] = Waiter(cursor: cursor, continuation: continuation)
                return state.generations[databaseID] ?? 0
            }
            guard let current else {
                continuation.resume(returning: Delivery(notifications: [], generation: nil))
                return
            }
            if knownGeneration != current {
                // Something may have landed since the caller last looked: read once now.
                Task { [self] in
                    let pending = (try? await store.notifications(databaseID: databaseID, after: cursor, limit: PushHub.batchLimit)) ?? []
                    guard !pending.isEmpty, let waiter = remove(databaseID, id) else { return }
                    waiter.continuation.resume(returning: Delivery(notifications: pending,
                                                                   generation: pending.count < PushHub.batchLimit ? current : nil))
                }
            }
            let nanoseconds = timeout.components.seconds * 1_000_000_000 + timeout.components.attoseconds / 1_000_000_000
            DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(Int(nanoseconds))) { [self] in
                guard let waiter = remove(databaseID, id) else { return }
                waiter.continuation.resume(returning: Delivery(notifications: [], generation: current))
            }
        }
    }

    private func remove(_ databaseID: Int64, _ id: UUID) -> Waiter? {
        state.withLock { $0.waiters[databaseID]?.removeValue(forKey: id) }
    }

    /// Ends every wait and stream (on shutdown) and refuses new ones.
    package func close() {
        let (all, sinks, heartbeats) = state.withLock { state in
            state.closed = true
            let all = state.waiters.values.flatMap(\.values)
            state.waiters.removeAll()
            let sinks = state.streams.values.flatMap { $0.values.map { ($0.sink, $0.parking) } }
            state.streams.removeAll()
            return (all, sinks, state.heartbeatTask)
        }
        wakeSignal.finish()
        heartbeats?.cancel()
        for waiter in all { waiter.continuation.resume(returning: Delivery(notifications: [], generation: nil)) }
        for (sink, parking) in sinks { sink.eventLoop.execute { sink.finish(parking: parking) } }
    }
}
