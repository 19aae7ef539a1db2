import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RecordModel
import RecordStore
import ServiceLifecycle

/// Where and how the daemon listens.
package struct HTTPServerConfiguration: Sendable {
    package var host: String
    package var port: Int
    /// Larger bodies are refused with `413 LIMIT_EXCEEDED` (400 records of up to 1 MB each would be
    /// far more; clients split batches on this error).
    package var maximumBodyBytes: Int = 32 * 1024 * 1024
    /// A connection that sends nothing (or half a request) for this long is closed.
    package var idleTimeoutSeconds: Int64 = 30
    /// Connections beyond this are closed on arrival.
    package var maximumConnections = 4096
    /// How long in-flight requests may finish after SIGTERM/SIGINT (`--shutdown-grace`).
    package var shutdownGraceSeconds = 10
    /// Peers whose `X-Forwarded-*` headers are believed (`RequestOrigin`).
    package var trustedProxies: [AddressRange] = []
    /// The web pages allowed to call the API from a browser.
    package var crossOrigin = CrossOriginPolicy()

    package init(host: String, port: Int) {
        self.host = host
        self.port = port
    }
}

/// Adapts Hummingbird's requests to `RecordAPI`, whose route table (`RecordAPI.routes`) decides
/// where each goes: asset bytes are streamed here, everything else is answered by the API, so
/// every answer, even for an unknown path, is the API's JSON.
struct APIResponder: HTTPResponder {
    typealias Context = ConnectionRequestContext
    let api: RecordAPI
    let maximumBodyBytes: Int
    var trustedProxies: [AddressRange] = []

    func respond(to request: Request, context: Context) async throws -> Response {
        let method: APIRequest.Method = request.method == .get ? .get : request.method == .post ? .post : .other
        var apiRequest = APIRequest(
            method: method, path: request.uri.path, query: APIRequest.parseQuery(request.uri.query ?? ""),
            authorization: request.headers[.authorization], deviceID: request.headers[APIResponder.deviceIDHeader],
            requestID: context.requestID)
        let origin = RequestOrigin(peer: context.channel.remoteAddress?.ipAddress, headers: request.headers, trustedProxies: trustedProxies)
        apiRequest.host = origin.host ?? request.head.authority
        apiRequest.forwardedProto = origin.scheme
        apiRequest.clientAddress = origin.clientAddress
        apiRequest.accept = request.headers[.accept]
        apiRequest.origin = request.headers[.origin]
        apiRequest.lastEventID = request.headers[APIResponder.lastEventIDHeader]
        apiRequest.webAuthTokenHeader = request.headers[APIResponder.webAuthTokenHeader]
        apiRequest.serverKeyID = request.headers[APIResponder.serverKeyIDHeader]
        apiRequest.signatureDate = request.headers[APIResponder.signatureDateHeader]
        apiRequest.signature = request.headers[APIResponder.signatureHeader]
        // Asset bytes are streamed, never collected.
        switch RecordAPI.routes.route(for: apiRequest)?.target {
        case .assetUpload?: return await AssetTransfer(api: api).respond(to: request, requestID: context.requestID, uploading: true)
        case .assetDownload?: return await AssetTransfer(api: api).respond(to: request, requestID: context.requestID, uploading: false)
        case .api?, nil: break
        }
        do {
            apiRequest.body = Array(buffer: try await request.body.collect(upTo: maximumBodyBytes))
        } catch {
            // The rest of the body is never read, so the connection cannot be reused: close it.
            // A ServerError comes from inflating a gzip body (corrupt, or inflating past the limit).
            throw RefusedRequest.closingConnection(error as? ServerError ?? ServerError(.limitExceeded, "request body is larger than \(maximumBodyBytes) bytes"))
        }
        let answer = await api.handle(apiRequest)
        guard let parking = answer.parking else { return Response(answer) }
        return Response(parked: answer, parking, channel: context.channel, hub: api.pushHub, metrics: api.metrics)
    }

    static let deviceIDHeader = HTTPField.Name("X-Device-ID")!
    static let lastEventIDHeader = HTTPField.Name("Last-Event-ID")!
    static let webAuthTokenHeader = HTTPField.Name(APIResponse.webAuthTokenHeader)!
    static let serverKeyIDHeader = HTTPField.Name("X-Apple-CloudKit-Request-KeyID")!
    static let signatureDateHeader = HTTPField.Name("X-Apple-CloudKit-Request-ISO8601Date")!
    static let signatureHeader = HTTPField.Name("X-Apple-CloudKit-Request-SignatureV1")!
}

/// The daemon's HTTP server: serves `api` until SIGINT or SIGTERM, then stops accepting, lets
/// in-flight requests finish (at most the shutdown grace) and returns.
package struct HTTPServer {
    package let api: RecordAPI
    package let configuration: HTTPServerConfiguration
    package var logger: Logger
    /// Background work that lives as long as the server (tombstone purging, webhook delivery).
    /// The API's push hub runs beside them, always.
    package var services: [any Service] = []

    package init(api: RecordAPI, configuration: HTTPServerConfiguration, logger: Logger) {
        self.api = api
        self.configuration = configuration
        self.logger = logger
    }

    /// Runs until shut down; `onReady` receives the bound address once the socket is listening.
    package func run(onReady: @escaping @Sendable (_ host: String, _ port: Int) -> Void) async throws {
        api.signIn.setCrossOrigin(configuration.crossOrigin)
        // Outermost first: CORS headers go on every answer, errors included; what compression or
        // the adapter throws (a refused body) is rendered by the error middleware.
        let responder = MiddlewareChain(
            [
                CrossOriginMiddleware(policy: configuration.crossOrigin),
                ErrorAnswerMiddleware(logger: api.logger),
                CompressionMiddleware(maximumBodyBytes: configuration.maximumBodyBytes, counters: api.metrics.compression),
            ],
            around: APIResponder(api: api, maximumBodyBytes: configuration.maximumBodyBytes, trustedProxies: configuration.trustedProxies))
        let host = configuration.host
        let openConnections = OpenConnections()
        let maximumConnections = configuration.maximumConnections
        let app = Application(
            responder: responder,
            server: .pushHTTP1(configuration: .init(
                additionalChannelHandlers: [
                    ConnectionLimiter(open: openConnections, maximum: maximumConnections), MalformedRequestResponder(),
                ],
                idleTimeout: .seconds(configuration.idleTimeoutSeconds),
                // Room for long CloudKit-style query strings and tokens; beyond this the HTTP
                // parser itself refuses the request (400 without a body).
                httpDecoderConfiguration: .init(maxHeaderFieldSize: 256 * 1024, maxHeaderListSize: 512 * 1024))),
            configuration: .init(address: .hostname(host, port: configuration.port), serverName: nil),
            onServerRunning: { [api] channel in
                let port = channel.localAddress?.port ?? 0
                api.serverDidBind(host: host, port: port)
                onReady(host, port)
            },
            logger: logger)
        // Shut down in reverse order: the other services first, then the hub (which ends the
        // parked connections), then the server (which waits for the connections to finish).
        var groupConfiguration = ServiceGroupConfiguration(
            services: [.init(service: app), .init(service: api.pushHub)] + services.map { .init(service: $0) },
            gracefulShutdownSignals: [.sigterm, .sigint],
            cancellationSignals: [],
            logger: logger)
        groupConfiguration.maximumGracefulShutdownDuration = .seconds(configuration.shutdownGraceSeconds)
        try await ServiceGroup(configuration: groupConfiguration).run()
    }
}
