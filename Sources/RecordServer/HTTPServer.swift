import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import RecordModel
import RecordStore
import ServiceLifecycle

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
        // One router: its middleware (CORS, request log, errors, compression) and routes (`RecordAPI.router`).
        let responder = api.router(configuration: configuration).buildResponder()
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
            logger: logger.formattingMetadataWhenWritten)
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
