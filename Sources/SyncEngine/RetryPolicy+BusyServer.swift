import RecordClient

extension RetryPolicy {
    /// Runs `body`, waiting out `THROTTLED` and `TRY_AGAIN_LATER` (a daemon whose database is
    /// restarting answers at once) as the policy says; past its last attempt the server's error
    /// is thrown as it came.
    func waitingOutBusyServer<T>(sleep: @Sendable (Double) async throws -> Void, _ body: () async throws -> T) async throws -> T {
        for attempt in 1... {
            do {
                return try await body()
            } catch RecordClientError.server(let error, let status) where error.code == .throttled || error.code == .tryAgainLater {
                guard let delay = delay(afterAttempt: attempt, retryAfter: error.retryAfter) else {
                    throw RecordClientError.server(error, httpStatus: status)
                }
                try await sleep(delay)
            }
        }
        fatalError("unreachable: the loop above returns or throws")
    }
}
