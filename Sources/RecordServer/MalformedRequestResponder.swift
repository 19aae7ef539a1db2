import Foundation
import HTTPTypes
import NIOCore
import NIOHTTP1
import NIOHTTPTypes
import RecordModel

/// Answers a request the HTTP parser refuses (an oversized header block, a broken request line)
/// with the contract's JSON error instead of the framework's empty 400, then closes the
/// connection. Errors in the middle of a request the API is already handling pass through. One per
/// connection, used on its event loop only.
final class MalformedRequestResponder: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// Between a request's head and the end of its response, the API owns the connection.
    private var requestInProgress = false

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        if case .head = unwrapInboundIn(data) { requestInProgress = true }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        if case .end = unwrapOutboundIn(data) { requestInProgress = false }
        context.write(data, promise: promise)
    }

    func errorCaught(context: ChannelHandlerContext, error: any Error) {
        guard error is HTTPParserError, !requestInProgress else {
            context.fireErrorCaught(error)
            return
        }
        let problem = ServerError.badRequest("malformed HTTP request (\(error)); headers are limited to 256 KB per field")
        // No request was read, so the answer's id is its own.
        let body = ErrorAnswer.json(problem, requestID: RandomID.uuidString()).body
        var head = HTTPResponse(status: .badRequest)
        head.headerFields[.contentType] = "application/json"
        head.headerFields[.contentLength] = String(body.count)
        head.headerFields[.connection] = "close"
        context.write(wrapOutboundOut(.head(head)), promise: nil)
        context.write(wrapOutboundOut(.body(ByteBuffer(bytes: body))), promise: nil)
        // The completion runs on the channel's event loop, where the context may be used.
        let boundContext = NIOLoopBound(context, eventLoop: context.eventLoop)
        context.writeAndFlush(wrapOutboundOut(.end(nil))).whenComplete { _ in boundContext.value.close(promise: nil) }
    }
}
