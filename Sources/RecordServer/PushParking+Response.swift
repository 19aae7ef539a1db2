import HTTPTypes
import Hummingbird
import NIOCore

extension Response {
    /// A parked courier answer: the head goes out as usual, then the connection's
    /// `PushConnection` parks it with the push hub, an event stream or a long-poll, and writes the
    /// body itself as the hub hands it notifications. `metrics` counts the open event streams.
    init(parked answer: APIResponse, _ parking: PushParking, channel: any Channel, hub: PushHub, metrics: ServerMetrics) {
        var headers: HTTPFields = [.contentType: answer.contentType]
        if case .eventStream = parking.kind { headers[.cacheControl] = "no-cache" }
        headers.append(answer.headers)
        self.init(status: .ok, headers: headers, body: ResponseBody { _ in
            // The head is written (the framework awaited it, so what the connection's handler
            // writes queues behind it on the event loop).
            try await channel.eventLoop.submit {
                let push = try channel.pipeline.syncOperations.handler(type: PushConnection.self)
                switch parking.kind {
                case .eventStream:
                    push.parkEventStream(hub: hub, databaseID: parking.databaseID, after: parking.cursor,
                                         onOpen: { metrics.eventStreamOpened() }, onClose: { metrics.eventStreamClosed() })
                case .longPoll(let seconds, let empty):
                    push.parkLongPoll(hub: hub, databaseID: parking.databaseID, after: parking.cursor,
                                      timeout: .seconds(Int64(seconds)), emptyAnswer: ByteBuffer(bytes: empty))
                }
            }.get()
        })
    }
}
