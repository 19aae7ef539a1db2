import HTTPTypes
import Hummingbird
import NIOCore

extension Response {
    /// The HTTP response of a whole API answer (its status, headers and body).
    init(_ answer: APIResponse) {
        var headers: HTTPFields = [.contentType: answer.contentType]
        headers.append(answer.headers)
        self.init(status: HTTPResponse.Status(code: answer.status), headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: answer.body)))
    }
}

extension HTTPFields {
    /// Appends `(name, value)` pairs; a name that is not a valid field name is skipped.
    mutating func append(_ extra: [(String, String)]) {
        for (name, value) in extra {
            if let field = HTTPField.Name(name) { append(HTTPField(name: field, value: value)) }
        }
    }
}
