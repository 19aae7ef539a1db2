import Foundation
import Synchronization

/// A token bucket per user: `ratePerSecond` requests on average with bursts up to `burst`. A
/// request over the limit is answered `429 THROTTLED` with the seconds until one is allowed.
final class RateLimiter: Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    let configuredRate: Double
    let configuredBurst: Double
    private struct State {
        /// The configured rate and burst divided among the daemons serving the store (a user's
        /// requests spread over them never exceed the configured limit in total).
        var ratePerSecond: Double
        var burst: Double
        var buckets: [Int64: Bucket] = [:]
    }

    private let state: Mutex<State>
    var ratePerSecond: Double { state.withLock { $0.ratePerSecond } }
    var burst: Double { state.withLock { $0.burst } }
    private let clock: @Sendable () -> Double

    init(ratePerSecond: Double, burst: Double, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSinceReferenceDate }) {
        self.configuredRate = ratePerSecond
        self.configuredBurst = burst
        self.state = Mutex(State(ratePerSecond: ratePerSecond, burst: burst))
        self.clock = clock
    }

    /// Shares the configured limit among `daemons` daemons.
    func share(among daemons: Int) {
        let count = Double(max(1, daemons))
        state.withLock { state in
            state.ratePerSecond = configuredRate / count
            state.burst = max(1, configuredBurst / count)
        }
    }

    /// nil if allowed; otherwise the whole seconds to wait.
    func acquire(userID: Int64) -> Int? {
        let now = clock()
        return state.withLock { state in
            var bucket = state.buckets[userID] ?? Bucket(tokens: state.burst, updated: now)
            bucket.tokens = min(state.burst, bucket.tokens + (now - bucket.updated) * state.ratePerSecond)
            bucket.updated = now
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                state.buckets[userID] = bucket
                return nil
            }
            state.buckets[userID] = bucket
            return max(1, Int(((1 - bucket.tokens) / state.ratePerSecond).rounded(.up)))
        }
    }
}
