import Hummingbird
import RecordModel
import RecordStore

/// The courier URL of a notification channel: a long-poll, or with `Accept: text/event-stream` a
/// Server-Sent Events stream. Its last segment is the channel's token, 256 random bits, so the
/// URL is a capability: it is served without other credentials (CloudKit JS polls it bare), and
/// with credentials only to its owner.
extension RecordAPI {
    /// A courier request that carries credentials: the channel must be the caller's.
    func courier(token: String, scope: DatabaseScope, request: RequestFacts) async throws -> APIResponse {
        let timeout = try RecordAPI.courierTimeout(request)
        guard !token.isEmpty, token.utf8.count <= 128 else { throw ServerError(.notFound, "no such notification channel") }
        return try await serveCourier(try await self.store.pushToken(scope, token: token), request: request, timeout: timeout)
    }

    /// A courier request without credentials. An unknown or ended channel is `404 NOT_FOUND` only
    /// after the wait a live channel with nothing new would take, so polling guesses tells nothing.
    func capabilityCourier(token: String, address: DatabaseAddress?, request: RequestFacts) async throws -> APIResponse {
        let timeout = try RecordAPI.courierTimeout(request)
        guard let address else { throw ServerError(.internalError, "a courier route without its address") }
        let channel = token.isEmpty || token.utf8.count > 128
            ? nil : try await store.courierChannel(token: token, container: address.container, environment: address.environment)
        guard let channel else {
            if request.accept?.contains("text/event-stream") != true, timeout > 0 {
                try? await Task.sleep(for: .seconds(timeout))
            }
            throw ServerError(.notFound, "no such notification channel")
        }
        return try await serveCourier(channel, request: request, timeout: timeout)
    }

    /// `timeout` in seconds (default 30, at most 60); a bad method or timeout is `BAD_REQUEST`.
    static func courierTimeout(_ request: RequestFacts) throws -> Int {
        guard request.method == .get || request.method == .post else { throw ServerError.badRequest("use GET") }
        guard let text = request.query["timeout"] else { return 30 }
        guard let seconds = Int(text), seconds >= 0 else { throw ServerError.badRequest("timeout must be a whole number of seconds") }
        return min(seconds, 60)
    }

    /// Which answer a courier request gets: an event stream (`Accept: text/event-stream`), a poll
    /// without a cursor one bare notification (`serveBarePoll`), a poll with `since` the envelope
    /// of every notification after it and the cursor to send next. An empty `since` is the
    /// envelope from the channel's start, for a client that wants the envelope and has no cursor yet.
    func serveCourier(_ channel: PushToken, request: RequestFacts, timeout: Int) async throws -> APIResponse {
        let resumeFrom = request.lastEventID ?? request.query["since"]
        let isEventStream = request.accept?.contains("text/event-stream") == true
        if resumeFrom == nil, !isEventStream { return try await serveBarePoll(channel, timeout: timeout) }
        let cursor = try resumeFrom.flatMap { $0.isEmpty ? nil : $0 }.map(NotificationCursor.decode) ?? channel.startCursor
        if isEventStream {
            return APIResponse(parking: PushParking(databaseID: channel.databaseID, cursor: cursor, kind: .eventStream))
        }
        // Answer at once when something is already waiting (also for timeout=0).
        let pending = try await self.store.notifications(databaseID: channel.databaseID, after: cursor, limit: PushHub.batchLimit)
        guard pending.isEmpty, timeout > 0 else { return APIResponse(status: 200, json: CourierAnswer.json(pending, cursor: cursor)) }
        // Otherwise the connection waits parked in the push hub (its empty answer is written at the deadline).
        let empty = CourierAnswer.json([], cursor: cursor).serialized()
        return APIResponse(parking: PushParking(databaseID: channel.databaseID, cursor: cursor,
                                                kind: .longPoll(timeoutSeconds: timeout, emptyAnswer: empty)))
    }

    /// The courier route's response: a parked one for the push hub on the request's connection
    /// (in process, the parking is handed to the caller, `InProcessResponder`), or the answer as it is.
    func courierResponse(_ answer: APIResponse, context: ConnectionRequestContext) throws -> Response {
        guard let parking = answer.parking else { return Response(answer) }
        if let channel = context.channel { return Response(parked: answer, parking, channel: channel, hub: pushHub, metrics: metrics) }
        guard let inProcess = context.inProcessParking else { throw ServerError(.internalError, "a parked answer without a connection") }
        inProcess.parking.withLock { $0 = parking }
        return Response(status: .ok, headers: [.contentType: answer.contentType])
    }
}
