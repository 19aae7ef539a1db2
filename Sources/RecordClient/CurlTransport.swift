import CCurl
import Foundation

/// HTTPS through libcurl, loaded with dlopen on the first HTTPS request (see `SocketTransport`
/// for why libcurl is not linked). Blocking; `SocketTransport` calls it from a dispatch thread.
enum CurlTransport {
    static func send(_ request: HTTPRequest) throws -> HTTPResponse {
        var request = request
        if let file = request.bodyFile {
            // libcurl is handed one buffer here: a file body is read whole (HTTPS servers only).
            var body: [UInt8] = []
            body.reserveCapacity(Int(file.size))
            try file.forEachPiece { body += $0 }
            request.body = body
            request.bodyFile = nil
        }
        var headerLines = request.headers.map { name, value in "\(name): \(value.filter { $0 != "\r" && $0 != "\n" })" }
        if request.body != nil, !request.headers.keys.contains(where: { $0.lowercased() == "content-type" }) {
            headerLines.append("Content-Type: application/json")
        }
        var cHeaders = headerLines.map { strdup($0) }
        defer { cHeaders.forEach { free($0) } }
        var response = ccurl_response()
        let timeout = Int(max(request.timeout, 0.001) * 1000)
        let result: Int32 = cHeaders.withUnsafeMutableBufferPointer { headers in
            headers.withMemoryRebound(to: UnsafePointer<CChar>?.self) { constHeaders in
                if let body = request.body {
                    return body.withUnsafeBufferPointer { bytes in
                        ccurl_perform(request.method, request.url.absoluteString, constHeaders.baseAddress, constHeaders.count,
                                      bytes.baseAddress ?? UnsafePointer(bitPattern: 1), bytes.count, timeout, &response)
                    }
                }
                return ccurl_perform(request.method, request.url.absoluteString, constHeaders.baseAddress, constHeaders.count,
                                     nil, 0, timeout, &response)
            }
        }
        defer { ccurl_response_free(&response) }
        let host = request.url.host.map { "\($0)\(request.url.port.map { ":\($0)" } ?? "")" } ?? request.url.absoluteString
        let error = withUnsafeBytes(of: response.error) { String(decoding: $0.prefix { $0 != 0 }, as: UTF8.self) }
        switch result {
        case 0:
            let body = response.body.map { Array(UnsafeBufferPointer(start: $0, count: response.body_length)) } ?? []
            return HTTPResponse(status: Int(response.status), body: body)
        case 3:
            throw RecordClientError.unreachable("the server at \(host) did not answer in time")
        default:
            throw RecordClientError.unreachable("cannot reach the server at \(host): \(error)")
        }
    }
}
