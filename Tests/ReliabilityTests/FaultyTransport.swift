import Foundation
import RecordClient
import RecordModel
import Synchronization
import TestSupport

/// The faults `FaultyTransport` injects.
enum Fault: String, CaseIterable, Comparable {
    /// The request never reached the server; the client sees a transport error.
    case requestLost
    /// The server applied the request, then the answer was lost; the client sees a transport error.
    case responseLost
    /// The request reached the server twice in a row (a retrying proxy); the client gets one answer.
    case duplicated
    /// `429 THROTTLED` with `retryAfter` 0 or 1, without reaching the server.
    case throttled
    /// `503 TRY_AGAIN_LATER` with `retryAfter` 0 or 1, without reaching the server.
    case tryAgainLater
    /// A notification poll answered late (0–40 ms on top of its own wait).
    case pollDelayed
    /// A notification poll answered with an earlier poll's answer (older cursor, older
    /// notifications); the fresh answer is kept back and given to the next poll.
    case pollReordered

    static func < (lhs: Fault, rhs: Fault) -> Bool { lhs.rawValue < rhs.rawValue }
}

/// How often each fault strikes, per request (polls have their own two).
struct FaultRates {
    var requestLost = 0.04
    var responseLost = 0.08
    var duplicated = 0.06
    var throttled = 0.04
    var tryAgainLater = 0.04
    var pollDelayed = 0.3
    var pollReordered = 0.2
}

/// Wraps a transport and, driven by a seeded generator, loses requests and answers, delivers
/// requests twice, throttles, and delays and reorders notification polls. Long polls are cut to
/// `timeout=0` plus a short real wait, so a watching engine neither blocks nor spins.
final class FaultyTransport: HTTPTransport {
    private struct State {
        var random: SplitMix64
        var heldPollAnswer: HTTPResponse?
        var enabled = true
        var currentRates: FaultRates
        var counts: [Fault: Int] = [:]
        var requestCount = 0
        var pollCount = 0
        var fetchCount = 0
        var trace: (@Sendable (String) -> Void)?
        var scripted: [ScriptedFault] = []
    }

    /// A fault for the next request whose path ends with `pathSuffix`, taken before any drawn one:
    /// for tests that need one exact exchange.
    struct ScriptedFault: Sendable {
        var pathSuffix: String
        var fault: Fault
        /// For `duplicated`: answer with the first delivery's answer instead of the second's.
        var answerFirst = false
    }

    /// Queues faults for coming requests, in order: each strikes the next request its path matches.
    func script(_ faults: [ScriptedFault]) { locked { $0.scripted += faults } }

    private let inner: any HTTPTransport
    private let state: Mutex<State>

    /// Told of every request with the fault it got, for the scenario's log.
    var trace: (@Sendable (String) -> Void)? {
        get { locked { $0.trace } }
        set { locked { $0.trace = newValue } }
    }

    init(_ inner: any HTTPTransport, seed: UInt64, rates: FaultRates = FaultRates()) {
        self.inner = inner
        self.state = Mutex(State(random: SplitMix64(seed: seed), currentRates: rates))
    }

    /// The fault rates in force (settable mid-run).
    var rates: FaultRates {
        get { locked { $0.currentRates } }
        set { locked { $0.currentRates = newValue } }
    }

    /// Turns every fault on or off.
    var isEnabled: Bool {
        get { locked { $0.enabled } }
        set { locked { $0.enabled = newValue; if !newValue { $0.heldPollAnswer = nil } } }
    }

    /// How many times each fault struck.
    var injected: [Fault: Int] { locked { $0.counts } }
    var requests: Int { locked { $0.requestCount } }
    /// Notification polls among the requests.
    var polls: Int { locked { $0.pollCount } }
    /// `changes/zone` requests among them: at least one per sync.
    var fetches: Int { locked { $0.fetchCount } }

    private func locked<T: Sendable>(_ body: (inout State) -> T) -> T {
        state.withLock { body(&$0) }
    }

    /// Draws the fault for one request (nil: deliver normally) and counts it.
    private func draw(path: String, isPoll: Bool, isFetch: Bool) -> (fault: Fault?, retryAfter: Int, answerFirst: Bool, delay: Double) {
        locked { state in
            state.requestCount += 1
            if isPoll { state.pollCount += 1 }
            if isFetch { state.fetchCount += 1 }
            guard state.enabled else { return (nil, 0, true, 0) }
            if let next = state.scripted.first, path.hasSuffix(next.pathSuffix) {
                state.scripted.removeFirst()
                state.counts[next.fault, default: 0] += 1
                return (next.fault, 0, next.answerFirst, 0)
            }
            let roll = Double.random(in: 0..<1, using: &state.random)
            let retryAfter = Int.random(in: 0...1, using: &state.random)
            let answerFirst = Bool.random(using: &state.random)
            let delay = Double.random(in: 0..<0.04, using: &state.random)
            var fault: Fault?
            var threshold = 0.0
            let rates = state.currentRates
            let ordered: [(Fault, Double)] = [
                (.requestLost, rates.requestLost), (.responseLost, rates.responseLost), (.duplicated, rates.duplicated),
                (.throttled, rates.throttled), (.tryAgainLater, rates.tryAgainLater),
            ]
            for (candidate, rate) in ordered {
                threshold += rate
                if roll < threshold { fault = candidate; break }
            }
            if fault == nil, isPoll {
                let pollRoll = Double.random(in: 0..<1, using: &state.random)
                if pollRoll < rates.pollReordered { fault = .pollReordered }
                else if pollRoll < rates.pollReordered + rates.pollDelayed { fault = .pollDelayed }
            }
            if let fault { state.counts[fault, default: 0] += 1 }
            return (fault, retryAfter, answerFirst, delay)
        }
    }

    func send(_ original: HTTPRequest) async throws -> HTTPResponse {
        let isPoll = original.url.path.contains("/courier/")
        let request = isPoll ? Self.shortened(original) : original
        let (fault, retryAfter, answerFirst, delay) = draw(path: original.url.path, isPoll: isPoll, isFetch: original.url.path.hasSuffix("/changes/zone"))
        if let trace, !isPoll || fault != nil { trace(Self.describe(request, fault: fault, answerFirst: answerFirst)) }
        switch fault {
        case .requestLost?:
            throw RecordClientError.unreachable("injected: the request was lost")
        case .responseLost?:
            _ = try await deliver(request, isPoll: isPoll)
            throw RecordClientError.unreachable("injected: the answer was lost")
        case .duplicated?:
            let first = try await deliver(request, isPoll: isPoll)
            let second = try await deliver(request, isPoll: isPoll)
            return answerFirst ? first : second
        case .throttled?:
            return Self.errorAnswer(ServerError(.throttled, "injected: slow down", retryAfter: retryAfter))
        case .tryAgainLater?:
            return Self.errorAnswer(ServerError(.tryAgainLater, "injected: try again later", retryAfter: retryAfter))
        case .pollDelayed?:
            let answer = try await deliver(request, isPoll: isPoll)
            try await Task.sleep(nanoseconds: UInt64(delay * 1e9))
            return answer
        case .pollReordered?:
            let fresh = try await deliver(request, isPoll: isPoll)
            return locked { state in
                guard let held = state.heldPollAnswer else { state.heldPollAnswer = fresh; return fresh }
                state.heldPollAnswer = fresh
                return held
            }
        case nil:
            return try await deliver(request, isPoll: isPoll)
        }
    }

    /// Sends to the server. A poll that found nothing waits a moment, as a long poll would.
    private func deliver(_ request: HTTPRequest, isPoll: Bool) async throws -> HTTPResponse {
        let answer = try await inner.send(request)
        if isPoll, answer.status == 200, (try? JSONValue.parse(answer.body))?["notifications"]?.arrayValue?.isEmpty ?? false {
            try await Task.sleep(nanoseconds: 20_000_000)
        }
        return answer
    }

    /// One line: the operation, its fault, and for `records/modify` each operation with its fields.
    static func describe(_ request: HTTPRequest, fault: Fault?, answerFirst: Bool) -> String {
        let parts = request.url.path.split(separator: "/")
        var line = parts.suffix(2).joined(separator: "/")
        if let fault { line += " [\(fault.rawValue)\(fault == .duplicated ? (answerFirst ? ", first answer" : ", second answer") : "")]" }
        if request.url.path.hasSuffix("/records/modify"), let body = request.body, let json = try? JSONValue.parse(body) {
            for operation in json["operations"]?.arrayValue ?? [] {
                let record = operation["record"]
                let fields = (record?["fields"]?.objectValue ?? [:]).map { name, value in
                    "\(name)=\(value["value"].map { $0.serializedString() } ?? "null")"
                }.sorted().filter { !$0.hasPrefix("modificationDate") }
                line += "\n    \(operation["operationType"]?.stringValue ?? "?") \(record?["recordName"]?.stringValue ?? "?") "
                    + "tag \(record?["recordChangeTag"]?.stringValue ?? "-") \(fields.joined(separator: " "))"
            }
        }
        return line
    }

    /// The same poll with `timeout=0`: answered at once, with what is waiting.
    static func shortened(_ request: HTTPRequest) -> HTTPRequest {
        guard var components = URLComponents(url: request.url, resolvingAgainstBaseURL: true) else { return request }
        components.percentEncodedQuery = (components.percentEncodedQuery ?? "").split(separator: "&")
            .map { $0.hasPrefix("timeout=") ? "timeout=0" : String($0) }.joined(separator: "&")
        var copy = request
        copy.url = components.url ?? request.url
        return copy
    }

    static func errorAnswer(_ error: ServerError) -> HTTPResponse {
        HTTPResponse(status: error.code.httpStatus, body: error.json(uuid: UUID().uuidString.lowercased()).serialized())
    }
}
