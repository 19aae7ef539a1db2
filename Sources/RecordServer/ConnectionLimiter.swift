import NIOCore
import Synchronization

/// The daemon's open connections, counted by every connection's `ConnectionLimiter`.
final class OpenConnections: Sendable {
    let count = Atomic<Int>(0)
}

/// Closes connections beyond `maximum` as soon as they open, so a flood of sockets cannot exhaust
/// the daemon's file descriptors; established connections are unaffected. One per connection, used
/// on its event loop only (the pipeline adds it there), so it needs no `Sendable`.
final class ConnectionLimiter: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = NIOAny

    private let open: OpenConnections
    private let maximum: Int
    private var counted = false

    init(open: OpenConnections, maximum: Int) {
        self.open = open
        self.maximum = maximum
    }

    func handlerAdded(context: ChannelHandlerContext) {
        counted = true
        if open.count.wrappingAdd(1, ordering: .relaxed).newValue > maximum {
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if counted {
            counted = false
            open.count.wrappingSubtract(1, ordering: .relaxed)
        }
    }
}
