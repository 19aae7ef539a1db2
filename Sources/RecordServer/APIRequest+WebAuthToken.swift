extension APIRequest {
    /// The user's token in a CloudKit-style query string: `ckWebAuthToken`, or `ckSession`, the
    /// name CloudKit JS 1.x gives the same token.
    var webAuthToken: String? { query["ckWebAuthToken"] ?? query["ckSession"] }
}
