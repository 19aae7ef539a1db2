import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import Synchronization

/// The daemon's router answering requests in process, without a socket: tests drive the whole
/// API through it (routing, middleware, authentication, handlers, error rendering) as a client
/// on the wire would. A courier answer that would park its connection comes back as its
/// `parking`, for the caller to park in memory (`RecordAPI.parkInMemory`).
package struct InProcessResponder: Sendable {
    private let responder: RouterResponder<ConnectionRequestContext>
    private let logger: Logger

    package init(api: RecordAPI, configuration: HTTPServerConfiguration = HTTPServerConfiguration(host: "127.0.0.1", port: 0)) {
        responder = api.router(configuration: configuration).buildResponder()
        logger = api.logger
    }

    package struct Answer: Sendable {
        package var status: Int
        package var headers: HTTPFields
        package var body: [UInt8]
        /// A courier answer's parking (an event stream, a long-poll that waits): its body is the hub's to write.
        package var parking: PushParking?
    }

    /// The answer to `method` on `uri` (its path and query), sent to `authority` with `headers` and `body`.
    package func respond(method: String, uri: String, authority: String? = nil, headers: [(String, String)] = [],
                         body: [UInt8] = []) async throws -> Answer {
        var fields = HTTPFields()
        for (name, value) in headers {
            if let name = HTTPField.Name(name) { fields.append(HTTPField(name: name, value: value)) }
        }
        let head = HTTPRequest(method: HTTPRequest.Method(method) ?? .get, scheme: "http", authority: authority, path: uri, headerFields: fields)
        let request = Request(head: head, body: RequestBody(buffer: ByteBuffer(bytes: body)))
        let parking = InProcessParking()
        let response = try await responder.respond(to: request, context: ConnectionRequestContext(logger: logger, parking: parking))
        let collected = Collected()
        try await response.body.write(CollectingWriter(collected: collected))
        return Answer(status: Int(response.status.code), headers: response.headers, body: collected.bytes.withLock { $0 },
                      parking: parking.parking.withLock { $0 })
    }

    private final class Collected: Sendable {
        let bytes = Mutex<[UInt8]>([])
    }

    private struct CollectingWriter: ResponseBodyWriter {
        let collected: Collected

        mutating func write(_ buffer: ByteBuffer) async throws {
            collected.bytes.withLock { $0.append(contentsOf: buffer.readableBytesView) }
        }

        consuming func finish(_ trailingHeaders: HTTPFields?) async throws {}
    }
}
