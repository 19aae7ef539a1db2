import Foundation

/// A token bucket per user: `ratePerSecond` requests on average with bursts up to `burst`. A
/// request over the limit is answered `429 THROTTLED` with the seconds until one is allowed.
final class RateLimiter: @unchecked Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    let configuredRate: Double
    let configuredBurst: Double
    /// The configured rate and burst divided among the daemons serving the store (a user's
    /// requests spread over them never exceed the configured limit in total).
    private(set) var ratePerSecond: Double
    private(set) var burst: Double
    private let lock = NSLock()
    private var buckets: [Int64: Bucket] = [:]
    private let clock: @Sendable () -> Double

    init(ratePerSecond: Double, burst: Double, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSinceReferenceDate }) {
        self.configuredRate = ratePerSecond
        self.configuredBurst = burst
        self.ratePerSecond = ratePerSecond
        self.burst = burst
        self.clock = clock
    }

    /// Shares the configured limit among `daemons` daemons.
    func share(among daemons: Int) {
        let count = Double(max(1, daemons))
        lock.withLock {
            ratePerSecond = configuredRate / count
            burst = max(1, configuredBurst / count)
        }
    }

    /// nil if allowed; otherwise the whole seconds to wait.
    func acquire(userID: Int64) -> Int? {
        let now = clock()
        lock.lock()
        defer { lock.unlock() }
        var bucket = buckets[userID] ?? Bucket(tokens: burst, updated: now)
        bucket.tokens = min(burst, bucket.tokens + (now - bucket.updated) * ratePerSecond)
        bucket.updated = now
        if bucket.tokens >= 1 {
            bucket.tokens -= 1
            buckets[userID] = bucket
            return nil
        }
        buckets[userID] = bucket
        return max(1, Int(((1 - bucket.tokens) / ratePerSecond).rounded(.up)))
    }
}
