/// Where and how the daemon listens (`HTTPServer`), and the limits and policies its router
/// applies (`RecordAPI.router`).
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
