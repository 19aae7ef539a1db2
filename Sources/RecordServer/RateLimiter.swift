import Foundation

/// A token bucket per user: `ratePerSecond` requests on average with bursts up to `burst`. A
/// request over the limit is answered `429 THROTTLED` with the seconds until one is allowed.
final class RateLimiter: @unchecked Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: Double
    }

    let ratePerSecond: Double
    let burst: Double
    private let lock = NSLock()
    private var buckets: [Int64: Bucket] = [:]
    private let clock: @Sendable () -> Double

    init(ratePerSecond: Double, burst: Double, clock: @escaping @Sendable () -> Double = { Date().timeIntervalSinceReferenceDate }) {
        self.ratePerSecond = ratePerSecond
        self.burst = burst
        self.clock = clock
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
