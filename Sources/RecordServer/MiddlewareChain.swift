import Hummingbird

/// Runs a list of Hummingbird middleware (outermost first) around a responder: the server's
/// middleware are the framework's own kind, so they move onto a `Router` as they are.
struct MiddlewareChain<Inner: HTTPResponder>: HTTPResponder {
    typealias Context = Inner.Context
    let middleware: [any RouterMiddleware<Context>]
    let inner: Inner

    init(_ middleware: [any RouterMiddleware<Context>], around inner: Inner) {
        self.middleware = middleware
        self.inner = inner
    }

    func respond(to request: Request, context: Context) async throws -> Response {
        try await respond(to: request, context: context, from: middleware[...])
    }

    private func respond(to request: Request, context: Context, from remaining: ArraySlice<any RouterMiddleware<Context>>) async throws -> Response {
        guard let first = remaining.first else { return try await inner.respond(to: request, context: context) }
        return try await first.handle(request, context: context) { request, context in
            try await respond(to: request, context: context, from: remaining.dropFirst())
        }
    }
}
