import Foundation

/// Where a client's private database lives: the server, the container and environment, and
/// the bearer token that identifies the user.
///
/// ```swift
/// let endpoint = ServerEndpoint(baseURL: URL(string: "http://127.0.0.1:8080")!,
///                               container: "iCloud.scorebook", environment: "production", token: token)
/// let client = RecordClient(endpoint: endpoint)
/// ```
public struct ServerEndpoint: Sendable, Equatable {
    public var baseURL: URL
    public var container: String
    public var environment: String
    public var token: String

    public init(baseURL: URL, container: String = "iCloud.scorebook", environment: String = "production", token: String) {
        self.baseURL = baseURL
        self.container = container
        self.environment = environment
        self.token = token
    }

    /// `/database/1/{container}/{environment}/{database}/{operation}`.
    func databaseURL(_ operation: String, database: String = "private") -> URL {
        baseURL.appendingPathComponent("database/1/\(container)/\(environment)/\(database)/\(operation)")
    }

    /// Operations outside a database, such as `tokens/create`.
    func environmentURL(_ operation: String) -> URL {
        baseURL.appendingPathComponent("database/1/\(container)/\(environment)/\(operation)")
    }
}
