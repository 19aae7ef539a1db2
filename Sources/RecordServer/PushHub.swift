import Foundation
import NIOCore
import RecordStore
import ServiceLifecycle
import Synchronization

/// Wakes parked connections (long-polls and event streams) when a commit lands. Nothing polls
/// the database on a timer: a parked connection sleeps until a commit of its database wakes it,
/// and one read per wake serves every connection parked on that database.
///
/// Parked connections are not waiting tasks: they are registrations (`PushSink`) the hub hands
/// notifications to on their connection's event loop. A commit is read once and handed to each
/// event loop in one job that goes through that loop's connections of the database and hands
/// each distinct cursor's share (usually one) to all of its connections, which frame it for their
/// clients once per share (`SharedFrames`), so 10,000 idle streams hold no suspended tasks and a
/// wake costs no task hops. The registrations are kept by loop, so a wake hands each loop its own
/// (a dictionary shared copy-on-write) without a pass over all of them first: the pass was the
/// time between the commit and the first write.
///
/// A read the store cannot answer (it is unreachable, or the deadline passed) loses no wake: the
/// database is read again after a back-off (`retryFailedReads`) until a read succeeds, so its
/// parked connections get the commit without waiting for another.
///
/// A `Service`: its wakes, heartbeats and retries run in `run()`, in the daemon's service group,
/// and end with it.
package final class PushHub: Service, Sendable {
    static let batchLimit = 500
    /// After a read the store could not answer, the wait before that database is read again:
    /// doubled while reads keep failing, up to `longestReadRetryDelay` (a store that is down is
    /// not asked in a loop; one that is back is read again within that long).
    static let readRetryDelay = Duration.seconds(1)
    static let longestReadRetryDelay = Duration.seconds(4)

    /// Reads a database's notifications after a cursor, at most a limit (the store's `notifications`).
    package typealias NotificationReader = @Sendable (_ databaseID: Int64, _ cursor: Int64, _ limit: Int) async throws -> [StoredNotification]

    /// One event stream: its sink and how far it has been sent. `cursor` and `quietBeats` are read
    /// and written only on the stream's event loop, by the hub's jobs there (after registration
    /// publishes them through the state lock; the jobs of one loop run in the order handed).
    /// Unchecked because the compiler cannot see that confinement to a loop: a `NIOLoopBoundBox`
    /// for the two would be one more allocation for every parked connection, and every long-poll
    /// parks anew.
    private final class StreamRegistration: @unchecked Sendable {
        let sink: any PushSink
        /// The sink's loop, kept here so that filing a registration by loop does not touch its connection.
        let eventLoop: any EventLoop
        let parking: UInt64
        /// A long-poll: answered once (a JSON answer), then forgotten.
        let answersOnce: Bool
        /// The cursor it registered with, for reads made off its loop.
        let registeredCursor: Int64
        var cursor: Int64
        /// Heartbeat ticks since the hub last wrote to this stream (see `sendHeartbeats`).
        var quietBeats = 0
        init(sink: any PushSink, parking: UInt64, answersOnce: Bool, cursor: Int64) {
            self.sink = sink
            self.eventLoop = sink.eventLoop
            self.parking = parking
            self.answersOnce = answersOnce
            self.registeredCursor = cursor
            self.cursor = cursor
        }
    }

    private typealias Registrations = [ObjectIdentifier: StreamRegistration]

    /// The parked connections of one database, by event loop (a handful of loops, found by identity).
    private struct DatabaseStreams {
        var loops: [(loop: any EventLoop, streams: Registrations)] = []
        /// No registered stream's cursor is below this: a registration lowers it, a wake raises it
        /// to what it delivered. A wake reads from here without looking at every stream.
        var lowestCursor = Int64.max

        var count: Int { loops.reduce(0) { $0 + $1.streams.count } }

        private func index(of loop: any EventLoop) -> Int? { loops.firstIndex { $0.loop === loop } }

        func registration(of sink: any PushSink) -> StreamRegistration? {
            index(of: sink.eventLoop).flatMap { loops[$0].streams[ObjectIdentifier(sink)] }
        }

        mutating func insert(_ registration: StreamRegistration) {
            if let index = index(of: registration.eventLoop) {
                loops[index].streams[ObjectIdentifier(registration.sink)] = registration
            } else {
                loops.append((registration.eventLoop, [ObjectIdentifier(registration.sink): registration]))
            }
            lowestCursor = min(lowestCursor, registration.cursor)
        }

        mutating func remove(_ sink: any PushSink) {
            guard let index = index(of: sink.eventLoop) else { return }
            loops[index].streams.removeValue(forKey: ObjectIdentifier(sink))
            if loops[index].streams.isEmpty { loops.remove(at: index) }
        }
    }

    private struct State {
        var streams: [Int64: DatabaseStreams] = [:]
        /// Databases with a commit not yet handled by the wake loop.
        var pendingWakes: Set<Int64> = []
        /// A heartbeat tick not yet handled by the wake loop.
        var heartbeatDue = false
        /// Databases whose last read failed, waiting for `retryFailedReads` to wake them again (a
        /// full wake also catches up the streams registered meanwhile).
        var failedReads: Set<Int64> = []
        /// Streams registered since the wake loop last looked, by database: each is sent what is
        /// already pending after its cursor (a catch-up of the new streams only, not a wake of
        /// every stream of the database: 10,000 streams opening were 10,000 wakes of all of them).
        var pendingCatchUps: [Int64: [StreamRegistration]] = [:]
        /// The wake loop took work and has not yet found the queue empty.
        var working = false
        var closed = false
        /// `run()` has begun: the wake loop reads `wakes`, which has one reader.
        var started = false

        /// Whether `stream` is still its connection's registration (not gone, not replaced by a
        /// newer parking of the same connection).
        func isCurrent(_ stream: StreamRegistration, databaseID: Int64) -> Bool {
            streams[databaseID]?.registration(of: stream.sink) === stream
        }
    }

    private let readNotifications: NotificationReader
    private let state = Mutex(State())
    /// Reads the store could not answer (`/metrics`).
    private let readFailures = Atomic<Int>(0)
    /// Whether a read has succeeded since `retryFailedReads` last woke the databases whose reads
    /// failed: its back-off starts over.
    private let readSucceeded = Atomic<Bool>(false)
    /// Polls without a cursor waiting in their own task for a commit (`CommitWaiters`).
    let commitWaiters = CommitWaiters()
    /// Monotonic nanoseconds (`DispatchTime.uptimeNanoseconds`) when the last commit reached the
    /// hub and when the last delivery (an event written to a stream, a long-poll answer handed to
    /// the server) finished: their difference is the server's own fan-out time for one commit, so
    /// the bench can tell it from its client's reading time.
    private let lastCommitNanoseconds = Atomic<UInt64>(0)
    private let lastDeliveryNanoseconds = Atomic<UInt64>(0)
    /// Nudges the wake loop (`run()`), which handles `pendingWakes` one database at a time, in
    /// order: a wake that reads before a later commit has its loops write before that commit's
    /// wake reads. Nudges coalesce (the loop takes every pending database at once).
    private let wakeSignal: AsyncStream<Void>.Continuation
    private let wakes: AsyncStream<Void>
    /// Nudges `retryFailedReads` when a read has failed (nudges coalesce).
    private let readRetrySignal: AsyncStream<Void>.Continuation
    private let readRetries: AsyncStream<Void>
    /// An event stream that had nothing written to it for up to this long gets a comment, so
    /// clients and proxies see it alive (see `tickHeartbeats`).
    private let heartbeatInterval: Duration

    /// Nothing is delivered until `run()` runs (commits and registrations meanwhile are kept).
    package convenience init(store: any RecordStorage, heartbeatInterval: Duration = .seconds(10)) {
        self.init(heartbeatInterval: heartbeatInterval) { databaseID, cursor, limit in
            try await store.notifications(databaseID: databaseID, after: cursor, limit: limit)
        }
    }

    /// A hub reading notifications with `readNotifications` (a test's may fail as a store does).
    package init(heartbeatInterval: Duration = .seconds(10), readNotifications: @escaping NotificationReader) {
        self.readNotifications = readNotifications
        self.heartbeatInterval = heartbeatInterval
        (wakes, wakeSignal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        (readRetries, readRetrySignal) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    deinit {
        wakeSignal.finish()
        readRetrySignal.finish()
    }

    /// Delivers until the service group shuts down (or the task is cancelled, or `close()` is
    /// called), then ends every parked connection. Delivers once: a second run only waits for its
    /// group to shut down.
    package func run() async {
        let first = state.withLock { state in
            defer { state.started = true }
            return !state.started
        }
        guard first else {
            try? await gracefulShutdown()
            return
        }
        await withDiscardingTaskGroup { group in
            group.addTask { await self.tickHeartbeats() }
            group.addTask { await self.retryFailedReads() }
            await withGracefulShutdownHandler {
                await self.runWakes()
            } onGracefulShutdown: {
                self.close()
            }
            group.cancelAll()
        }
        close()
    }

    /// The wake loop: until `close()` ends `wakes` (or the task is cancelled).
    private func runWakes() async {
        for await _ in wakes {
            while let (databaseIDs, catchUps, heartbeatDue) = takePendingWakes() {
                for databaseID in databaseIDs.sorted() { await wake(databaseID) }
                // A database just woken has sent its new streams whatever was pending.
                for (databaseID, registrations) in catchUps where !databaseIDs.contains(databaseID) {
                    await catchUp(databaseID, registrations)
                }
                if heartbeatDue { sendHeartbeats() }
            }
        }
    }

    package var isClosed: Bool { state.withLock { $0.closed } }

    /// Whether a wake or a catch-up is queued, waiting to be retried or being read and written
    /// (tests wait for false before a commit whose delivery they examine).
    package var isBusy: Bool {
        state.withLock { $0.working || !$0.pendingWakes.isEmpty || !$0.pendingCatchUps.isEmpty || !$0.failedReads.isEmpty }
    }

    /// How many reads of notifications the store could not answer (each is tried again).
    package var readFailureCount: Int { readFailures.load(ordering: .relaxed) }

    /// How many deliveries are waiting right now, long-polls and event streams (for metrics and tests).
    package var waiterCount: Int {
        state.withLock { state in
            state.streams.values.reduce(0) { $0 + $1.count }
        } + commitWaiters.count
    }

    /// Called by the store after every commit; the empty set when commits may have been missed
    /// (the store's commit listener reconnected): then every waiting database reads again.
    package func commitLanded(_ databaseIDs: Set<Int64>) {
        commitWaiters.wake(databaseIDs)
        if databaseIDs.isEmpty {
            requestWakes(state.withLock { Set($0.streams.keys) })
            return
        }
        lastCommitNanoseconds.store(DispatchTime.now().uptimeNanoseconds, ordering: .relaxed)
        requestWakes(databaseIDs)
    }

    private func requestWakes(_ databaseIDs: Set<Int64>) {
        state.withLock { $0.pendingWakes.formUnion(databaseIDs) }
        wakeSignal.yield()
    }

    private func takePendingWakes() -> (Set<Int64>, [Int64: [StreamRegistration]], heartbeatDue: Bool)? {
        state.withLock { state in
            guard !state.pendingWakes.isEmpty || !state.pendingCatchUps.isEmpty || state.heartbeatDue else {
                state.working = false
                return nil
            }
            state.working = true
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
    package func register(_ sink: any PushSink, parking: UInt64, databaseID: Int64, after cursor: Int64, answersOnce: Bool) -> Bool {
        let registered = state.withLock { state -> Bool in
            if state.closed { return false }
            let registration = StreamRegistration(sink: sink, parking: parking, answersOnce: answersOnce, cursor: cursor)
            state.streams[databaseID, default: DatabaseStreams()].insert(registration)
            state.pendingCatchUps[databaseID, default: []].append(registration)
            return true
        }
        if registered { wakeSignal.yield() }
        return registered
    }

    /// Forgets a parked connection (its client has gone, or its long-poll was answered).
    package func unregister(_ sink: any PushSink, parking: UInt64, databaseID: Int64) {
        state.withLock { state in
            guard state.streams[databaseID]?.registration(of: sink)?.parking == parking else { return }
            state.streams[databaseID]?.remove(sink)
            if state.streams[databaseID]?.loops.isEmpty == true { state.streams.removeValue(forKey: databaseID) }
        }
    }

    /// One tick for all streams at half the interval; the wake loop then has each loop send a
    /// heartbeat to each of its streams that had nothing written to it for two ticks, so an idle
    /// stream hears from the daemon at least every interval (the contract asks for 15 s; the
    /// interval is 10) and a busy one never gets a heartbeat: 10,000 comments at a tick took the
    /// event loops as long as a commit's 10,000 events, and a commit landing just then waited
    /// for them. Until cancelled.
    private func tickHeartbeats() async {
        let tick = heartbeatInterval / 2
        while (try? await Task.sleep(for: tick)) != nil, !isClosed {
            state.withLock { $0.heartbeatDue = true }
            wakeSignal.yield()
        }
    }

    /// Wakes the databases whose reads failed again, a while after the failure (`readRetryDelay`,
    /// doubled while no read succeeds in between): at most one read of a database per delay
    /// however long the store is down. Until cancelled.
    private func retryFailedReads() async {
        var delay = Duration.zero
        for await _ in readRetries {
            let startOver = readSucceeded.exchange(false, ordering: .relaxed) || delay == .zero
            delay = startOver ? PushHub.readRetryDelay : min(delay * 2, PushHub.longestReadRetryDelay)
            guard (try? await Task.sleep(for: delay)) != nil, !isClosed else { return }
            requestWakes(state.withLock { state in
                defer { state.failedReads.removeAll() }
                return state.failedReads
            })
        }
    }

    /// A read of `databaseID` failed: it is woken again later (`retryFailedReads`).
    private func readFailed(_ databaseID: Int64) {
        readFailures.wrappingAdd(1, ordering: .relaxed)
        state.withLock { _ = $0.failedReads.insert(databaseID) }
        readRetrySignal.yield()
    }

    /// The notifications of `databaseID` after `cursor`; nil (and a retry asked for) when the
    /// store could not answer.
    private func read(_ databaseID: Int64, after cursor: Int64) async -> [StoredNotification]? {
        do {
            let notifications = try await readNotifications(databaseID, cursor, PushHub.batchLimit)
            readSucceeded.store(true, ordering: .relaxed)
            return notifications
        } catch {
            readFailed(databaseID)
            return nil
        }
    }

    /// On the wake loop: a heartbeat to every event stream quiet for two ticks, by a job on each
    /// loop (where the streams' `quietBeats` live).
    private func sendHeartbeats() {
        let byLoop = state.withLock { state in PushHub.groupedByLoop(state.streams.values.flatMap { $0.loops.map { ($0.loop, $0.streams) } }) }
        for (loop, groups) in byLoop {
            loop.execute {
                let frames = SharedFrames()
                for streams in groups {
                    for stream in streams.values where !stream.answersOnce {
                        stream.quietBeats += 1
                        guard stream.quietBeats >= 2 else { continue }
                        stream.quietBeats = 0
                        stream.sink.heartbeat(frames, parking: stream.parking)
                    }
                }
            }
        }
    }

    /// `pairs` grouped by their event loop (a handful, found by identity), in order of first sight.
    private static func groupedByLoop<Item>(_ pairs: [(loop: any EventLoop, item: Item)]) -> [(loop: any EventLoop, items: [Item])] {
        var groups: [(loop: any EventLoop, items: [Item])] = []
        for (loop, item) in pairs {
            if let index = groups.firstIndex(where: { $0.loop === loop }) {
                groups[index].items.append(item)
            } else {
                groups.append((loop, [item]))
            }
        }
        return groups
    }

    /// What a wake or a catch-up read: the notifications after the lowest cursor, and for a batch
    /// cut at the limit, reads of their own for the cursors past its end.
    private struct Reading: Sendable {
        var batch: [StoredNotification]
        var aheadReads: [Int64: [StoredNotification]]
    }

    /// One loop's part of a delivery: its streams of the database (the registrations shared
    /// copy-on-write with the hub's state, or a catch-up's list), dropped once written so that the
    /// state's dictionary is again its own; and the long-polls it answered.
    private final class LoopDelivery: Sendable {
        enum Streams {
            case registered(Registrations)
            case listed([StreamRegistration])
        }
        let loop: any EventLoop
        /// Taken by the loop's job; the long-polls it answered, read once every loop has written.
        /// (A lock no two threads want at once: the job and then the last loop to finish.)
        private let work: Mutex<(streams: Streams?, answered: [StreamRegistration])>
        init(loop: any EventLoop, streams: Streams) {
            self.loop = loop
            self.work = Mutex((streams, []))
        }

        func takeStreams() -> Streams? { work.withLock { $0.streams.take() } }
        var answered: [StreamRegistration] {
            get { work.withLock { $0.answered } }
            set { work.withLock { $0.answered = newValue } }
        }
    }

    /// Hands each loop one job that hands its streams their shares (`deliverShares`). Once every
    /// loop has delivered, the hub forgets the long-polls answered.
    private func deliver(_ deliveries: [LoopDelivery], reading: Reading, databaseID: Int64) {
        let unfinished = Atomic(deliveries.count)
        let finish: @Sendable () -> Void = { [weak self] in
            let answeredByLoop = deliveries.map(\.answered)
            // A long-poll is answered once: it is forgotten once every loop has written (not
            // meanwhile, taking a core from the writes). A wake in between that still finds it
            // delivers nothing (the connection takes no delivery once answered); a connection that
            // has meanwhile parked again has a new registration, which stays.
            guard answeredByLoop.contains(where: { !$0.isEmpty }) else { return }
            self?.state.withLock { state in
                for answered in answeredByLoop {
                    for stream in answered where state.isCurrent(stream, databaseID: databaseID) {
                        state.streams[databaseID]?.remove(stream.sink)
                    }
                }
                if state.streams[databaseID]?.loops.isEmpty == true { state.streams.removeValue(forKey: databaseID) }
            }
        }
        for delivery in deliveries {
            delivery.loop.execute { [weak self] in
                let wrote: Bool
                var answered: [StreamRegistration] = []
                // Taken out, so the state's dictionary is again its own once this job has written.
                switch delivery.takeStreams() {
                case .registered(let streams): wrote = PushHub.deliverShares(streams.values, reading, answered: &answered)
                case .listed(let streams): wrote = PushHub.deliverShares(streams, reading, answered: &answered)
                case nil: wrote = false
                }
                if !answered.isEmpty { delivery.answered = answered }
                if wrote { self?.deliveryWritten() }
                if unfinished.subtract(1, ordering: .acquiringAndReleasing).newValue == 0 { finish() }
            }
        }
    }

    /// On a loop: hands each of `streams` its share of `reading` (what came after its cursor), one
    /// `PushShare` per distinct cursor, looked up only when the cursor changes from the stream
    /// before (usually all streams share one). True if anything was delivered.
    private static func deliverShares(_ streams: some Sequence<StreamRegistration>, _ reading: Reading,
                                      answered: inout [StreamRegistration]) -> Bool {
        var shares: [Int64: PushShare?] = [:]
        var previous: (cursor: Int64, share: PushShare?)?
        var delivered = false
        for stream in streams {
            let share: PushShare?
            if let previous, previous.cursor == stream.cursor {
                share = previous.share
            } else if let known = shares[stream.cursor] {
                share = known
            } else {
                let mine = reading.aheadReads[stream.cursor] ?? reading.batch.filter { $0.id > stream.cursor }
                share = mine.isEmpty ? nil : PushShare(mine, after: stream.cursor)
                shares[stream.cursor] = share
            }
            previous = (stream.cursor, share)
            guard let share else { continue }
            stream.cursor = share.lastCursor
            stream.quietBeats = 0
            stream.sink.deliver(share, parking: stream.parking)
            if stream.answersOnce { answered.append(stream) }
            delivered = true
        }
        return delivered
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
        let (loops, lowest) = state.withLock { state in
            let database = state.streams[databaseID]
            // Registrations from here on lower it again; this wake raises it once it has read.
            state.streams[databaseID]?.lowestCursor = .max
            return (database?.loops ?? [], database?.lowestCursor ?? .max)
        }
        guard !loops.isEmpty else { return }
        guard let batch = await read(databaseID, after: lowest) else {
            // Nothing was delivered: the retry reads again from the same bound.
            state.withLock { state in
                if let bound = state.streams[databaseID]?.lowestCursor { state.streams[databaseID]?.lowestCursor = min(bound, lowest) }
            }
            return
        }
        let complete = batch.count < PushHub.batchLimit
        // A full batch read from the lowest cursor may end before a stream further ahead: such a
        // stream gets its own read (one per distinct cursor), so it is not left asleep with
        // notifications pending.
        var aheadReads: [Int64: [StoredNotification]] = [:]
        if !complete, let last = batch.last?.id {
            var cursors = Set<Int64>()
            // The streams' cursors live on their loops: ask each (only for a batch cut at the limit).
            for (loop, streams) in loops {
                cursors.formUnion((try? await loop.submit { Set(streams.values.map(\.cursor)) }.get()) ?? [])
            }
            // One that fails leaves its streams to the next wake (asked for below, and by the retry).
            for cursor in cursors where cursor >= last {
                if let ahead = await read(databaseID, after: cursor) { aheadReads[cursor] = ahead }
            }
        }
        // Once their loops have written, every stream of this wake is at or past this.
        let delivered = batch.last?.id ?? lowest
        state.withLock { state in
            if let bound = state.streams[databaseID]?.lowestCursor { state.streams[databaseID]?.lowestCursor = min(bound, delivered) }
        }
        guard !batch.isEmpty || !aheadReads.isEmpty else { return }
        deliver(loops.map { LoopDelivery(loop: $0.loop, streams: .registered($0.streams)) },
                reading: Reading(batch: batch, aheadReads: aheadReads), databaseID: databaseID)
        // A stream cut at the batch limit has more waiting: read on for it.
        if !complete || aheadReads.values.contains(where: { $0.count >= PushHub.batchLimit }) { requestWakes([databaseID]) }
    }

    /// Sends streams registered since the last look what is already pending after their cursors
    /// (those still registered: one may have gone, or parked again under a newer registration).
    /// Each loop skips a stream a wake has meanwhile brought past what this reads.
    private func catchUp(_ databaseID: Int64, _ registrations: [StreamRegistration]) async {
        let streams = state.withLock { state in
            registrations.filter { state.isCurrent($0, databaseID: databaseID) }
        }
        guard let lowest = streams.lazy.map(\.registeredCursor).min() else { return }
        // A failed read is retried as a full wake of the database: the registrations have lowered
        // its bound to their cursors, so it reads what they are owed.
        guard let batch = await read(databaseID, after: lowest), !batch.isEmpty else { return }
        // A read cut at the limit: the full wake reads on per cursor.
        guard batch.count < PushHub.batchLimit else {
            requestWakes([databaseID])
            return
        }
        let byLoop = PushHub.groupedByLoop(streams.map { ($0.eventLoop, $0) })
        deliver(byLoop.map { LoopDelivery(loop: $0.loop, streams: .listed($0.items)) },
                reading: Reading(batch: batch, aheadReads: [:]), databaseID: databaseID)
    }

    /// Ends every parked stream and long-poll (on shutdown) and refuses new ones; `run()` returns.
    package func close() {
        let sinks = state.withLock { state in
            state.closed = true
            let sinks = state.streams.values.flatMap { $0.loops.flatMap { $0.streams.values.map { ($0.sink, $0.parking) } } }
            state.streams.removeAll()
            return sinks
        }
        wakeSignal.finish()
        readRetrySignal.finish()
        commitWaiters.close()
        for (sink, parking) in sinks { sink.eventLoop.execute { sink.finish(parking: parking) } }
    }
}
