import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif

/// The HTTP transport over `URLSession`. Uses the completion-handler API, which works the same
/// on Linux and Apple platforms.
public final class URLSessionTransport: HTTPTransport, @unchecked Sendable {
    private let session: URLSession

    public init() {
        let configuration = URLSessionConfiguration.ephemeral
        configuration.requestCachePolicy = .reloadIgnoringLocalCacheData
        configuration.urlCache = nil
        configuration.httpCookieStorage = nil
        self.session = URLSession(configuration: configuration)
    }

    deinit { session.finishTasksAndInvalidate() }

    public func send(_ request: HTTPRequest) async throws -> HTTPResponse {
        var urlRequest = URLRequest(url: request.url, timeoutInterval: request.timeout)
        urlRequest.httpMethod = request.method
        for (name, value) in request.headers { urlRequest.setValue(value, forHTTPHeaderField: name) }
        if let body = request.body { urlRequest.httpBody = Data(body) }
        return try await withCheckedThrowingContinuation { continuation in
            let task = session.dataTask(with: urlRequest) { data, response, error in
                if let error {
                    continuation.resume(throwing: RecordClientError.unreachable(Self.describe(error, url: request.url)))
                    return
                }
                guard let http = response as? HTTPURLResponse else {
                    continuation.resume(throwing: RecordClientError.invalidResponse("no HTTP response from \(request.url.absoluteString)"))
                    return
                }
                continuation.resume(returning: HTTPResponse(status: http.statusCode, body: data.map { [UInt8]($0) } ?? []))
            }
            task.resume()
        }
    }

    private static func describe(_ error: Error, url: URL) -> String {
        let host = url.host.map { "\($0)\(url.port.map { ":\($0)" } ?? "")" } ?? url.absoluteString
        if let urlError = error as? URLError {
            switch urlError.code {
            case .cannotConnectToHost, .networkConnectionLost, .notConnectedToInternet, .cannotFindHost:
                return "cannot reach the server at \(host)"
            case .timedOut:
                return "the server at \(host) did not answer in time"
            default:
                return "cannot reach the server at \(host): \(urlError.localizedDescription)"
            }
        }
        return "cannot reach the server at \(host): \(error.localizedDescription)"
    }
}
