/// Where asset bytes move: the URLs `assets/upload` hands out and the download URLs records
/// carry. Both the API (which makes them) and the HTTP server (which streams them) read these.
enum AssetURLs {
    static let uploadPath = "/assets/1/upload/"
    static let downloadPath = "/assets/1/download/"

    static func handles(_ path: String) -> Bool { path.hasPrefix(uploadPath) || path.hasPrefix(downloadPath) }
}
