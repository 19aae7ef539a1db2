import Atomics
import NIOCore

/// Closes connections beyond `maximum` as soon as they open, so a flood of sockets cannot exhaust
/// the daemon's file descriptors; established connections are unaffected.
final class ConnectionLimiter: ChannelInboundHandler, RemovableChannelHandler, @unchecked Sendable {
    typealias InboundIn = NIOAny

    private let open: ManagedAtomic<Int>
    private let maximum: Int
    private var counted = false

    init(open: ManagedAtomic<Int>, maximum: Int) {
        self.open = open
        self.maximum = maximum
    }

    func handlerAdded(context: ChannelHandlerContext) {
        counted = true
        if open.wrappingIncrementThenLoad(ordering: .relaxed) > maximum {
            context.close(promise: nil)
        }
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        if counted {
            counted = false
            open.wrappingDecrement(ordering: .relaxed)
        }
    }
}
