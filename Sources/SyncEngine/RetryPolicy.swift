/// How long to wait before trying again after `THROTTLED`, `TRY_AGAIN_LATER` or a lost
/// connection: the server's `retryAfter` when it gave one, growing exponentially on repeated
/// failures, and giving up after `maximumAttempts`.
public struct RetryPolicy: Equatable, Sendable {
    public var maximumAttempts: Int
    public var baseDelay: Double
    public var maximumDelay: Double

    public init(maximumAttempts: Int = 5, baseDelay: Double = 0.5, maximumDelay: Double = 30) {
        self.maximumAttempts = maximumAttempts
        self.baseDelay = baseDelay
        self.maximumDelay = maximumDelay
    }

    /// Seconds to wait before attempt number `attempt + 1` (the first failure is attempt 1),
    /// or nil when it is time to give up.
    public func delay(afterAttempt attempt: Int, retryAfter: Int?) -> Double? {
        guard attempt >= 1, attempt <= maximumAttempts else { return nil }
        let exponential = baseDelay * Double(1 << min(attempt - 1, 20))
        return min(max(Double(retryAfter ?? 0), exponential), max(maximumDelay, Double(retryAfter ?? 0)))
    }
}
