import Foundation
import NIOCore
import NIOPosix
import RecordModel
@testable import RecordServer
import RecordStore
import Synchronization
import XCTest

/// The push hub over a real store: one read per commit serves every waiter of a database, and a
/// waiter is woken by any commit that has something for it, whatever the other waiters' cursors.
final class PushHubTests: SubscriptionStoreTestCase {
    /// A long-poll far behind (600 notifications, more than one read's limit) and one up to date
    /// park together; one more commit lands. Both are answered with their share: the one ahead
    /// gets the new notification only, the one behind a full batch from its cursor.
    func testALongPollAheadOfAFullBatchIsAnsweredByTheCommit() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        let hub = runningHub(store.base)
        defer { hub.close() }
        let (pending, latest) = try sixHundredPendingNotifications()
        let behind = RecordingSink(eventLoop: group.next(), answersOnce: true)
        let ahead = RecordingSink(eventLoop: group.next(), answersOnce: true)
        XCTAssertTrue(hub.register(ahead, parking: 1, databaseID: databaseID, after: latest, answersOnce: true))
        XCTAssertTrue(hub.register(behind, parking: 1, databaseID: databaseID, after: cursor, answersOnce: true))

        let newest = newName("Thing")
        try create(ZoneID.defaultZoneName, newest, "Thing")
        hub.commitLanded([databaseID])
        XCTAssertTrue(ahead.waitForDeliveries(1), "answered by the commit")
        XCTAssertTrue(behind.waitForDeliveries(1))
        let aheadAnswer = try ahead.answer(0)
        XCTAssertEqual(aheadAnswer["notifications"]?.arrayValue?.count, 1)
        XCTAssertTrue(String(decoding: aheadAnswer.serialized(), as: UTF8.self).contains(newest))
        let behindAnswer = try behind.answer(0)
        XCTAssertEqual(behindAnswer["notifications"]?.arrayValue?.count, 500, "the long-poll behind gets one read's worth from its cursor")
        XCTAssertEqual(behindAnswer["cursor"]?.stringValue, NotificationCursor.encode(pending[499].id))
        // The hub may offer the one behind the rest before it forgets it: its connection takes one answer.
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual([ahead.answersWritten, behind.answersWritten], [1, 1], "a long-poll is answered once")
    }

    /// A commit the hub was never told of (its store's commit listener was reconnecting), then
    /// the announcement that commits may have been missed (the empty set): the parked long-poll
    /// is answered with the notification instead of sleeping to its deadline.
    func testAnAnnouncementOfMissedCommitsWakesEveryWaitingDatabase() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let hub = runningHub(store.base)
        defer { hub.close() }
        try subscribe(querySubscription("things", type: "Thing"))
        let poll = RecordingSink(eventLoop: group.next(), answersOnce: true)
        XCTAssertTrue(hub.register(poll, parking: 1, databaseID: databaseID, after: cursor, answersOnce: true))
        XCTAssertEqual(hub.waiterCount, 1)
        Thread.sleep(forTimeInterval: 0.1)
        XCTAssertEqual(poll.deliveries.count, 0, "nothing pending yet")

        let thing = newName("Thing")
        try create(ZoneID.defaultZoneName, thing, "Thing")  // committed without telling the hub
        hub.commitLanded([])
        XCTAssertTrue(poll.waitForDeliveries(1))
        XCTAssertEqual(try poll.answer(0)["notifications"]?.arrayValue?.count, 1, "the missed commit's notification is delivered")
    }

    /// Parked connections (event streams and long-polls) on two event loops: one commit is read
    /// once and handed to each loop as one share, which the streams on a loop frame once (they
    /// write the same bytes), a long-poll is answered once and forgotten, a stream stays
    /// registered for the next commit.
    func testOneCommitIsEncodedOnceForEveryParkedConnection() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        let hub = runningHub(store.base)
        defer { hub.close() }
        try subscribe(querySubscription("things", type: "Thing"))
        let streams = (0..<6).map { _ in RecordingSink(eventLoop: group.next()) }
        let polls = (0..<4).map { _ in RecordingSink(eventLoop: group.next(), answersOnce: true) }
        for sink in streams { XCTAssertTrue(hub.register(sink, parking: 1, databaseID: databaseID, after: cursor, answersOnce: false)) }
        for sink in polls { XCTAssertTrue(hub.register(sink, parking: 7, databaseID: databaseID, after: cursor, answersOnce: true)) }
        XCTAssertEqual(hub.waiterCount, 10)
        // The registrations' catch-ups read first: one still reading when the commit lands would
        // deliver it to its streams with buffers of its own.
        let idleBy = Date().addingTimeInterval(10)
        while hub.isBusy, Date() < idleBy { usleep(1_000) }
        XCTAssertFalse(hub.isBusy)

        let thing = newName("Thing")
        try create(ZoneID.defaultZoneName, thing, "Thing")
        hub.commitLanded([databaseID])
        for sink in streams + polls { XCTAssertTrue(sink.waitForDeliveries(1), "every parked connection is written to") }

        // Events: one HTTP chunk holding an `id:`/`data:` event naming the record.
        let event = try XCTUnwrap(streams[0].deliveries.first)
        let eventText = String(decoding: event.bytes.readableBytesView, as: UTF8.self)
        XCTAssertTrue(eventText.contains("\r\nid: ") && eventText.contains("\ndata: ") && eventText.contains(thing), eventText)
        XCTAssertEqual(event.parking, 1)
        // Long-polls: the body of a JSON answer (the HTTP encoder frames it).
        let answer = try XCTUnwrap(polls[0].deliveries.first)
        let answerText = String(decoding: answer.bytes.readableBytesView, as: UTF8.self)
        XCTAssertTrue(answerText.hasPrefix("{") && answerText.contains(#""notifications":["#) && answerText.contains(thing), answerText)
        XCTAssertEqual(answer.parking, 7)
        // Encoded once: the streams of one loop hold one and the same buffer.
        for loop in [streams[0].eventLoop, streams[1].eventLoop] {
            let onLoop = streams.filter { $0.eventLoop === loop }.compactMap { $0.deliveries.first?.bytes }
            XCTAssertGreaterThan(onLoop.count, 1)
            let addresses = Set(onLoop.map { $0.withUnsafeReadableBytes { UInt(bitPattern: $0.baseAddress) } })
            XCTAssertEqual(addresses.count, 1, "one buffer per loop, not one per stream")
        }
        // The long-polls are forgotten once answered (once every loop has written); the streams
        // wait for the next commit.
        let forgottenBy = Date().addingTimeInterval(5)
        while hub.waiterCount > 6, Date() < forgottenBy { Thread.sleep(forTimeInterval: 0.005) }
        XCTAssertEqual(hub.waiterCount, 6)

        let second = newName("Thing")
        try create(ZoneID.defaultZoneName, second, "Thing")
        hub.commitLanded([databaseID])
        for sink in streams { XCTAssertTrue(sink.waitForDeliveries(2)) }
        let next = String(decoding: try XCTUnwrap(streams[3].deliveries.last).bytes.readableBytesView, as: UTF8.self)
        XCTAssertTrue(next.contains(second) && !next.contains(thing), "a stream gets only what came after its last event")
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(polls.map(\.deliveries.count), [1, 1, 1, 1], "an answered long-poll is not written to again")
    }

    /// Connections parking behind the latest notification (a client resuming from its cursor) are
    /// sent what is pending at once, each exactly once, with no commit; one parking at the latest
    /// cursor, and those parked before, get nothing from the newcomers' catch-up.
    func testStreamsParkingBehindAreSentWhatIsPendingOnceEach() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        let hub = runningHub(store.base)
        defer { hub.close() }
        try subscribe(querySubscription("things", type: "Thing"))
        let thing = newName("Thing")
        try create(ZoneID.defaultZoneName, thing, "Thing")
        let latest = try XCTUnwrap(try store.notifications(databaseID: databaseID, after: cursor, limit: 10).last?.id)

        let upToDate = RecordingSink(eventLoop: group.next())
        XCTAssertTrue(hub.register(upToDate, parking: 1, databaseID: databaseID, after: latest, answersOnce: false))
        let first = (0..<40).map { _ in RecordingSink(eventLoop: group.next()) }
        for sink in first { XCTAssertTrue(hub.register(sink, parking: 1, databaseID: databaseID, after: cursor, answersOnce: false)) }
        for sink in first { XCTAssertTrue(sink.waitForDeliveries(1), "a stream behind is caught up without a commit") }
        let second = (0..<40).map { index in RecordingSink(eventLoop: group.next(), answersOnce: index % 2 == 0) }
        for (index, sink) in second.enumerated() {
            XCTAssertTrue(hub.register(sink, parking: 2, databaseID: databaseID, after: cursor, answersOnce: index % 2 == 0))
        }
        for sink in second { XCTAssertTrue(sink.waitForDeliveries(1)) }
        Thread.sleep(forTimeInterval: 0.2)

        for sink in first + second {
            XCTAssertEqual(sink.deliveries.count, 1, "caught up once")
            XCTAssertTrue(String(decoding: sink.deliveries[0].bytes.readableBytesView, as: UTF8.self).contains(thing))
        }
        XCTAssertEqual(upToDate.deliveries.count, 0, "nothing is pending after the latest cursor")
        let forgottenBy = Date().addingTimeInterval(5)
        while hub.waiterCount > 61, Date() < forgottenBy { Thread.sleep(forTimeInterval: 0.005) }
        XCTAssertEqual(hub.waiterCount, 61, "the 20 long-polls among them were answered and forgotten")

        // The next commit reaches every stream once more, and only with what is new.
        let next = newName("Thing")
        try create(ZoneID.defaultZoneName, next, "Thing")
        hub.commitLanded([databaseID])
        let streams = [upToDate] + first + second.enumerated().filter { $0.offset % 2 == 1 }.map(\.element)
        for sink in streams { XCTAssertTrue(sink.waitForDeliveries(sink === upToDate ? 1 : 2)) }
        let latestEvent = String(decoding: try XCTUnwrap(first[0].deliveries.last).bytes.readableBytesView, as: UTF8.self)
        XCTAssertTrue(latestEvent.contains(next) && !latestEvent.contains(thing))
    }

    /// Streams far apart on two loops: one 600 notifications behind (more than a read's limit),
    /// one at the latest. The hub reads no stream's cursor off its loop (a wake reads from a bound
    /// kept at registration; a batch cut at the limit asks the loops for their cursors), and still
    /// the one behind gets every notification exactly once and in order, and the one at the latest
    /// gets the next commit, and only it.
    func testStreamsFarApartEachGetEveryNotificationOnceInOrder() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        let hub = runningHub(store.base)
        defer { hub.close() }
        let (_, latest) = try sixHundredPendingNotifications()

        let behind = RecordingSink(eventLoop: group.next())
        let ahead = RecordingSink(eventLoop: group.next())
        XCTAssertFalse(behind.eventLoop === ahead.eventLoop)
        XCTAssertTrue(hub.register(ahead, parking: 1, databaseID: databaseID, after: latest, answersOnce: false))
        XCTAssertTrue(hub.register(behind, parking: 1, databaseID: databaseID, after: cursor, answersOnce: false))
        let newest = newName("Thing")
        try create(ZoneID.defaultZoneName, newest, "Thing")
        hub.commitLanded([databaseID])

        XCTAssertTrue(ahead.waitForDeliveries(1))
        let expected = try store.notifications(databaseID: databaseID, after: cursor, limit: 1000).map { NotificationCursor.encode($0.id) }
        XCTAssertEqual(expected.count, 601)
        let deadline = Date().addingTimeInterval(10)
        while behind.eventIDs.count < expected.count, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual(behind.eventIDs, expected, "every notification once, in order")
        XCTAssertEqual(ahead.eventIDs, [expected.last!], "the stream at the latest gets the new notification only")
        XCTAssertTrue(String(decoding: try XCTUnwrap(ahead.deliveries.first).bytes.readableBytesView, as: UTF8.self).contains(newest))
    }

    /// Heartbeats go only to quiet streams: a stream that keeps getting events gets none (at 10,000
    /// streams a heartbeat to each took the event loops as long as a commit's events, and a commit
    /// landing then waited for it), an idle one gets one every interval, and a busy one that goes
    /// quiet gets them again.
    func testOnlyQuietStreamsGetHeartbeats() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        // Ticks every 0.5 s; a stream quiet for two ticks gets the comment.
        let hub = runningHub(store.base, heartbeatInterval: .seconds(1))
        defer { hub.close() }
        try subscribe(querySubscription("things", type: "Thing"))
        let busy = RecordingSink(eventLoop: group.next())
        let idle = RecordingSink(eventLoop: group.next())
        XCTAssertTrue(hub.register(busy, parking: 1, databaseID: databaseID, after: cursor, answersOnce: false))
        // Another database: no commit of this test reaches it.
        XCTAssertTrue(hub.register(idle, parking: 1, databaseID: databaseID + 1000, after: 0, answersOnce: false))

        // A commit every 50 ms for 2.8 s: the busy stream is never quiet for a tick; the idle one
        // hears at the second and fourth ticks (1 s and 2 s in).
        let until = Date().addingTimeInterval(2.8)
        var commits = 0
        while Date() < until {
            try create(ZoneID.defaultZoneName, newName("Thing"), "Thing")
            hub.commitLanded([databaseID])
            commits += 1
            XCTAssertTrue(busy.waitForDeliveries(commits), "each commit reaches the busy stream")
            Thread.sleep(forTimeInterval: 0.05)
        }
        XCTAssertEqual(busy.heartbeats, 0, "a stream that keeps getting events gets no heartbeat")
        XCTAssertGreaterThanOrEqual(idle.heartbeats, 2, "an idle stream gets one every interval (1 s here)")
        XCTAssertLessThanOrEqual(idle.heartbeats, 3, "and not more often")
        XCTAssertEqual(idle.deliveries.count, idle.heartbeats, "the idle stream got nothing else")

        // Quiet now: the busy stream hears from the daemon again within the interval and a tick.
        let quietBy = Date().addingTimeInterval(3)
        while busy.heartbeats == 0, Date() < quietBy { Thread.sleep(forTimeInterval: 0.02) }
        XCTAssertEqual(busy.heartbeats, 1, "a stream gone quiet gets heartbeats again")
    }

    /// A commit lands while the store cannot answer reads (`TRY_AGAIN_LATER`): its wake's read
    /// fails. The parked event stream and long-poll get the commit once reads succeed again, with
    /// no further commit, and meanwhile the hub does not ask the failing store in a loop.
    func testACommitWhoseReadFailedReachesParkedConnectionsOnceReadsAnswer() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 2)
        defer { try? group.syncShutdownGracefully() }
        let reads = SwitchableReads(store.base)
        let hub = runningHub(reads)
        defer { hub.close() }
        try subscribe(querySubscription("things", type: "Thing"))
        let stream = RecordingSink(eventLoop: group.next())
        let poll = RecordingSink(eventLoop: group.next(), answersOnce: true)
        XCTAssertTrue(hub.register(stream, parking: 1, databaseID: databaseID, after: cursor, answersOnce: false))
        XCTAssertTrue(hub.register(poll, parking: 1, databaseID: databaseID, after: cursor, answersOnce: true))
        let idleBy = Date().addingTimeInterval(10)
        while hub.isBusy, Date() < idleBy { usleep(1_000) }
        XCTAssertFalse(hub.isBusy, "the registrations' catch-ups have read (nothing pending)")

        reads.failing = true
        let thing = newName("Thing")
        try create(ZoneID.defaultZoneName, thing, "Thing")
        hub.commitLanded([databaseID])
        XCTAssertTrue(reads.waitForFailures(1), "the commit's wake read, and failed")
        // The store stays down for 2.5 s: the hub reads again after 1 s, then waits longer.
        Thread.sleep(forTimeInterval: 2.5)
        XCTAssertEqual(stream.deliveries.count + poll.deliveries.count, 0, "nothing to deliver while reads fail")
        XCTAssertLessThanOrEqual(reads.failures, 3, "no busy retries while the store cannot answer")
        XCTAssertEqual(hub.readFailureCount, reads.failures, "every failed read is counted")

        reads.failing = false
        let recovered = Date()
        let streamDelivered = stream.waitForDeliveries(1)
        let pollAnswered = poll.waitForDeliveries(1)
        XCTAssertTrue(streamDelivered, "the stream gets the commit without another commit")
        XCTAssertTrue(pollAnswered, "the long-poll is answered with it")
        guard streamDelivered, pollAnswered else { return }
        XCTAssertLessThan(Date().timeIntervalSince(recovered), 5, "within the longest retry delay of the store answering again")
        XCTAssertTrue(String(decoding: stream.deliveries[0].bytes.readableBytesView, as: UTF8.self).contains(thing))
        XCTAssertEqual(try poll.answer(0)["notifications"]?.arrayValue?.count, 1)
        Thread.sleep(forTimeInterval: 0.2)
        XCTAssertEqual([stream.deliveries.count, poll.answersWritten], [1, 1], "delivered once")
    }

    /// A connection parks behind a pending notification while the store cannot answer reads: its
    /// catch-up read fails. Once reads succeed again it is sent what is pending, with no commit.
    func testAConnectionParkingWhileReadsFailIsCaughtUpOnceReadsAnswer() throws {
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let reads = SwitchableReads(store.base)
        let hub = runningHub(reads)
        defer { hub.close() }
        try subscribe(querySubscription("things", type: "Thing"))
        let thing = newName("Thing")
        try create(ZoneID.defaultZoneName, thing, "Thing")

        reads.failing = true
        let poll = RecordingSink(eventLoop: group.next(), answersOnce: true)
        XCTAssertTrue(hub.register(poll, parking: 1, databaseID: databaseID, after: cursor, answersOnce: true))
        XCTAssertTrue(reads.waitForFailures(1), "the catch-up read, and failed")
        XCTAssertEqual(poll.deliveries.count, 0)

        reads.failing = false
        let recovered = Date()
        guard poll.waitForDeliveries(1) else { return XCTFail("the long-poll is caught up without a commit") }
        XCTAssertLessThan(Date().timeIntervalSince(recovered), 5)
        let answer = try poll.answer(0)
        XCTAssertEqual(answer["notifications"]?.arrayValue?.count, 1)
        XCTAssertTrue(String(decoding: answer.serialized(), as: UTF8.self).contains(thing))
    }

    /// A query subscription and 600 notifications of it (more than one read's limit): all of
    /// them after `cursor`, and the id of the last.
    private func sixHundredPendingNotifications() throws -> (pending: [StoredNotification], latest: Int64) {
        try subscribe(querySubscription("things", type: "Thing"))
        for _ in 0..<2 {
            try modify(ZoneID.defaultZoneName, (0..<300).map { _ in (.create, wireRecord(newName("Thing"), "Thing")) })
        }
        let pending = try store.notifications(databaseID: databaseID, after: cursor, limit: 1000)
        XCTAssertEqual(pending.count, 600)
        return (pending, try XCTUnwrap(pending.last?.id))
    }
}

/// A hub delivering until the test ends it with `close()`.
private func runningHub(_ store: any RecordStorage, heartbeatInterval: Duration = .seconds(10)) -> PushHub {
    let hub = PushHub(store: store, heartbeatInterval: heartbeatInterval)
    Task { await hub.run() }
    return hub
}

/// A hub reading notifications through `reads`, delivering until the test ends it with `close()`.
/// No heartbeat within a test's time: a stream's every delivery is then an event.
private func runningHub(_ reads: SwitchableReads) -> PushHub {
    let hub = PushHub(heartbeatInterval: .seconds(600)) { databaseID, cursor, limit in
        try await reads.notifications(databaseID: databaseID, after: cursor, limit: limit)
    }
    Task { await hub.run() }
    return hub
}

/// The store's reads of notifications, made to fail as a store's do while it cannot answer
/// (`TRY_AGAIN_LATER`) for as long as `failing` is set.
private final class SwitchableReads: Sendable {
    private let base: any RecordStorage
    private let state = Mutex((failing: false, failures: 0))

    init(_ base: any RecordStorage) { self.base = base }

    var failing: Bool {
        get { state.withLock { $0.failing } }
        set { state.withLock { $0.failing = newValue } }
    }

    /// Reads refused so far.
    var failures: Int { state.withLock { $0.failures } }

    func notifications(databaseID: Int64, after cursor: Int64, limit: Int) async throws -> [StoredNotification] {
        let refused = state.withLock { state in
            if state.failing { state.failures += 1 }
            return state.failing
        }
        if refused { throw ServerError(.tryAgainLater, "the store cannot answer", retryAfter: 1) }
        return try await base.notifications(databaseID: databaseID, after: cursor, limit: limit)
    }

    func waitForFailures(_ count: Int) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while failures < count, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        return failures >= count
    }
}

/// A parked connection that records what the hub hands it, framed as a socket's connection
/// frames it: events in a chunk, or a long-poll's JSON answer body.
private final class RecordingSink: PushSink {
    let eventLoop: any EventLoop
    let answersOnce: Bool
    private let recorded = Mutex<[(bytes: ByteBuffer, parking: UInt64)]>([])

    init(eventLoop: any EventLoop, answersOnce: Bool = false) {
        self.eventLoop = eventLoop
        self.answersOnce = answersOnce
    }

    var deliveries: [(bytes: ByteBuffer, parking: UInt64)] { recorded.withLock { $0 } }
    /// The `id:` of every event delivered, in order.
    var eventIDs: [String] {
        deliveries.flatMap { delivery in
            // Split at any line end: the chunk's "\r\n" is one `Character`, not a "\n".
            String(decoding: delivery.bytes.readableBytesView, as: UTF8.self).split(whereSeparator: \.isNewline)
                .filter { $0.hasPrefix("id: ") }.map { String($0.dropFirst(4)) }
        }
    }
    var heartbeats: Int {
        deliveries.filter { String(decoding: $0.bytes.readableBytesView, as: UTF8.self).contains(": heartbeat\n\n") }.count
    }

    func deliver(_ share: PushShare, parking: UInt64) {
        XCTAssertTrue(eventLoop.inEventLoop, "the hub hands a connection its share on the connection's own loop")
        let bytes = answersOnce ? CourierAnswer.body(share) : EventStreamFrames.events(share)
        recorded.withLock { $0.append((bytes, parking)) }
    }

    func heartbeat(_ frames: SharedFrames, parking: UInt64) {
        XCTAssertTrue(eventLoop.inEventLoop)
        let bytes = EventStreamFrames.heartbeat(frames)
        recorded.withLock { $0.append((bytes, parking)) }
    }

    func finish(parking: UInt64) {}

    /// How many of the deliveries a long-poll's connection parked as 1 writes (it takes one answer).
    var answersWritten: Int {
        var connection = PushConnectionStateMachine()
        _ = connection.parkLongPoll(emptyAnswer: ByteBuffer())
        return deliveries.filter { connection.delivered(parking: $0.parking, channelIsWritable: true) == .writeAnswer }.count
    }

    /// Delivery `index` as a long-poll's JSON answer.
    func answer(_ index: Int) throws -> JSONValue {
        try JSONValue.parse(Array(buffer: deliveries[index].bytes))
    }

    func waitForDeliveries(_ count: Int) -> Bool {
        let deadline = Date().addingTimeInterval(10)
        while deliveries.count < count, Date() < deadline { Thread.sleep(forTimeInterval: 0.005) }
        return deliveries.count >= count
    }
}
