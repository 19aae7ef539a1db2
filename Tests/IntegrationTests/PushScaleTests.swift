import Foundation
import RecordModel
import XCTest

#if canImport(Glibc)
import Glibc
#endif

/// One real daemon holding 1,000 Server-Sent Event streams (issue 3): all of them get a commit's
/// notification, and while they wait the daemon does not spin (no per-connection polling).
final class PushScaleTests: PushTestCase {
    static let streamCount = 1000

    override func setUpWithError() throws {
        // The test process holds the 1,000 client sockets itself.
        var limit = rlimit()
        getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        limit.rlim_cur = limit.rlim_max
        setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        try XCTSkipIf(limit.rlim_cur < rlim_t(Self.streamCount + 200), "the hard open-file limit (\(limit.rlim_max)) is too low")
        try super.setUpWithError()
        try createZone(zone)
    }

    func testOneDaemonHoldsAThousandEventStreamsAndWakesThemAllWithoutSpinning() throws {
        try subscribe(querySubscription("games", type: "Game", firesOn: ["create"]))
        let courier = try createCourier()
        var streams: [EventStreamClient] = []
        for _ in 0..<Self.streamCount {
            let stream = try openEventStream(courier)
            XCTAssertEqual(stream.waitForHead(timeout: 10), 200)
            streams.append(stream)
        }
        let metrics = try daemon.request("GET", "/metrics").body
        XCTAssertTrue(String(decoding: metrics, as: UTF8.self).contains("scorebookd_subscribers_connected \(Self.streamCount)"),
                      "the daemon counts every open stream")

        // Idle: 1,000 waiting streams cost next to no CPU (a poller would burn it).
        let before = try ProcessStat.cpuSeconds(of: daemon.processIdentifier)
        Thread.sleep(forTimeInterval: 2)
        let idleCPU = try ProcessStat.cpuSeconds(of: daemon.processIdentifier) - before
        print("PushScaleTests: idle CPU \(idleCPU) s in 2 s with \(Self.streamCount) streams")
        XCTAssertLessThan(idleCPU, 0.1, "CPU seconds used in 2 s of waiting by 1,000 streams")

        let game = newName("Game")
        try create(game, "Game", ["name": "Catan"])
        let committed = Date()
        var delivered = 0
        for stream in streams {
            guard let event = stream.nextEvent(timeout: max(1, 20 - Date().timeIntervalSince(committed))) else { continue }
            if (try? JSONValue.parse(event.data))?["ck"]?["qry"]?["rid"] == .string(game) { delivered += 1 }
        }
        XCTAssertEqual(delivered, Self.streamCount, "every stream got the notification")
        XCTAssertLessThan(Date().timeIntervalSince(committed), 10)
        for stream in streams { stream.closeConnection() }
    }
}
