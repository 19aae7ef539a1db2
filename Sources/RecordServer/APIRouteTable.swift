/// Where a request goes, looked up by its path: a page at an exact path (`/health`, `/console`,
/// `/signin`...) or a tree under the path's first segment (`/database/…`, `/device/…`,
/// `/share/…`, `/assets/…`). Built once (`RecordAPI.routes`); a request costs one or two
/// dictionary look-ups and a check of each candidate's method and headers, never a walk over
/// every route. What matches nothing is the API's `404 NOT_FOUND`. `API` is the type whose
/// handlers the routes call (`RecordAPI`; the table itself knows nothing of it).
struct APIRouteTable<API: Sendable>: Sendable {
    typealias Handler = @Sendable (API, APIRequest) async throws -> APIResponse

    /// What a route does with its request.
    enum Target: Sendable {
        /// Answered by the API from the whole request.
        case api(Handler)
        /// Asset bytes, streamed by the HTTP server with the rest of the path (`AssetTransfer`);
        /// not answerable from a collected request.
        case assetUpload
        case assetDownload
    }

    struct Route: Sendable {
        /// The metrics' and request log's name for what the request asked (bounded: never the path).
        var label: @Sendable (APIRequest) -> String
        /// Extra conditions (a method, an `Accept`): a request that fails them looks further.
        var accepts: @Sendable (APIRequest) -> Bool
        var target: Target
    }

    private var exact: [String: [Route]] = [:]
    private var byFirstSegment: [Substring: [Route]] = [:]

    /// A route for `path` exactly (the query string is not part of it).
    mutating func add(_ path: String, label: String = "other", when accepts: @escaping @Sendable (APIRequest) -> Bool = { _ in true },
                      _ target: Target) {
        exact[path, default: []].append(Route(label: { _ in label }, accepts: accepts, target: target))
    }

    /// A route for every path under `/segment/`.
    mutating func addTree(_ segment: String, label: @escaping @Sendable (APIRequest) -> String = { _ in "other" },
                          when accepts: @escaping @Sendable (APIRequest) -> Bool = { _ in true }, _ target: Target) {
        byFirstSegment[Substring(segment), default: []].append(Route(label: label, accepts: accepts, target: target))
    }

    /// The route of `request`: its exact path's, else its first segment's; nil for none.
    func route(for request: APIRequest) -> Route? {
        if let routes = exact[request.path], let route = routes.first(where: { $0.accepts(request) }) { return route }
        let path = request.path.utf8.first == UInt8(ascii: "/") ? request.path.dropFirst() : Substring(request.path)
        let segment = path.prefix { $0 != "/" }
        guard segment.endIndex < path.endIndex, let routes = byFirstSegment[segment] else { return nil }
        return routes.first { $0.accepts(request) }
    }
}
