import RecordModel
import RecordStore

/// `GET /ready`: whether this daemon can serve now (readiness, for load balancers), as opposed
/// to `GET /health`, which only says the process answers (liveness).
extension RecordAPI {
    /// How long `/ready` (and the store's figures in `/metrics`) wait for the store: a load
    /// balancer's check gives up after a few seconds.
    static let readinessDeadline: Duration = .seconds(2)

    func readinessResponse() async -> APIResponse {
        do {
            try await StoreTransactionRunner(deadline: RecordAPI.readinessDeadline)
                .run(unreachable: "the store did not answer within 2 s") { _ in try await self.store.checkReady() }
            return APIResponse(status: 200, json: ["status": "ok"])
        } catch {
            // A short reason only: no addresses, no SQL.
            let reason = (error as? ServerError)?.reason ?? ServerError(storeFailure: error).reason
            return APIResponse(status: 503, json: ["status": "unavailable", "reason": .string(reason)])
        }
    }
}
