import Foundation
import RecordModel
import Synchronization
import XCTest

/// Writers that keep creating records through real daemons while a test takes the database away,
/// and remember every answer: how long it took, its status, and which records were acknowledged.
final class WriteLoad: Sendable {
    struct Answer {
        var daemonPort: Int
        var started: Date
        var seconds: TimeInterval
        var status: Int
        var body: JSONValue?
    }

    private struct Progress {
        var answers: [Answer] = []
        var acknowledged: [String] = []
        var stopping = false
        var running = 0
    }

    private let progress = Mutex(Progress())
    private let path: String
    private let token: String
    private let zone: String

    init(path: String, token: String, zone: String) {
        self.path = path
        self.token = token
        self.zone = zone
    }

    /// Starts one writer per port in `ports` (a port may repeat: two writers on one daemon).
    func start(ports: [Int]) {
        for (index, port) in ports.enumerated() {
            progress.withLock { $0.running += 1 }
            let thread = Thread { self.write(writer: index, port: port) }
            thread.start()
        }
    }

    private func write(writer: Int, port: Int) {
        // Bounded: at most 5,000 writes a writer; a pause between them keeps the store small.
        for sequence in 0..<5000 {
            if progress.withLock({ $0.stopping }) { break }
            let name = "load-\(writer)-\(sequence)"
            let body: JSONValue = [
                "zoneID": ["zoneName": .string(zone)],
                "operations": [["operationType": "create", "record": [
                    "recordName": .string(name), "recordType": "Load", "fields": ["n": ["value": .int(Int64(sequence))]],
                ]]],
            ]
            let started = Date()
            var answer = Answer(daemonPort: port, started: started, seconds: 0, status: 0, body: nil)
            do {
                let reply = try RawHTTP.send(port: port, method: "POST", path: path, headers: [("Authorization", "Bearer \(token)")],
                                             body: Array(body.serializedString().utf8), timeout: 30)
                answer.status = reply.status
                answer.body = try? JSONValue.parse(reply.body)
            } catch {
                answer.status = -1  // no answer within 30 s, or the connection failed
            }
            answer.seconds = Date().timeIntervalSince(started)
            let saved = answer.status == 200 && answer.body?["records"]?.arrayValue?.first?["recordChangeTag"] != nil
            progress.withLock {
                $0.answers.append(answer)
                if saved { $0.acknowledged.append(name) }
            }
            Thread.sleep(forTimeInterval: 0.02)
        }
        progress.withLock { $0.running -= 1 }
    }

    /// Stops the writers and waits (at most `timeout` seconds) for their last requests.
    @discardableResult
    func stop(timeout: TimeInterval = 40) -> Bool {
        progress.withLock { $0.stopping = true }
        let end = Date().addingTimeInterval(timeout)
        while progress.withLock({ $0.running }) > 0 && Date() < end { Thread.sleep(forTimeInterval: 0.05) }
        return progress.withLock { $0.running } == 0
    }

    var allAnswers: [Answer] { progress.withLock { $0.answers } }
    var acknowledgedNames: [String] { progress.withLock { $0.acknowledged } }
    /// How many answers have come back so far.
    var answerCount: Int { progress.withLock { $0.answers.count } }
}

/// What one outage did to the requests, for the test's log (and the closing note).
struct OutageFigures: CustomStringConvertible {
    var name: String
    var requests: Int
    var refused: Int
    var slowest: TimeInterval
    var recovery: TimeInterval
    var description: String {
        String(format: "%@: %d requests (%d answered 503), slowest answer %.2f s, recovered %.2f s after PostgreSQL answered",
               name, requests, refused, slowest, recovery)
    }
}
