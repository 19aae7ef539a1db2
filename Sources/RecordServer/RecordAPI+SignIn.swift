import Foundation
import RecordModel
import RecordStore

/// Web sign-in, as CloudKit JS expects it: `GET /signin?container=C&origin=O` is a form (name or
/// email, password); a right password makes a new web-auth token and the answer page hands it to
/// the page that opened it with `window.opener.postMessage({ckSession: TOKEN}, O)`, but only
/// when `O` is an allowed origin or the daemon's own. Signed-in users change their password with
/// `POST …/private/users/password` (`scorebook account password`).
extension RecordAPI {
    static let signInPath = "/signin"

    /// The sign-in page's URL for a request that needs a user: the `redirectURL` of its
    /// `AUTHENTICATION_REQUIRED`, when it carries an API token (a browser app's request).
    func signInRedirectURL(_ request: RequestFacts, container: String) -> String? {
        guard request.query["ckAPIToken"] != nil else { return nil }
        var query = [URLQueryItem(name: "container", value: container)]
        if let origin = request.origin, mayReceiveToken(origin, request) {
            query.append(URLQueryItem(name: "origin", value: origin))
        }
        var components = URLComponents(string: baseURL(request) + RecordAPI.signInPath)
        components?.percentEncodedQuery = query.map { "\($0.name)=\(RecordAPI.formEncode($0.value ?? ""))" }.joined(separator: "&")
        return components?.string
    }

    /// The sign-in page and its form's answer.
    func signInResponse(_ request: RequestFacts, body: [UInt8]) async throws -> APIResponse {
        switch request.method {
        case .get:
            let origin = request.query["origin"] ?? baseURL(request)
            let container = request.query["container"] ?? ""
            // Said before anyone types a password that could not be handed over.
            guard mayReceiveToken(origin, request) else { return SignInPage.refusal(origin: origin) }
            return SignInPage.form(container: container, origin: origin, message: nil, status: 200)
        case .post:
            return try await signInAttempt(request, body: body)
        default:
            throw ServerError.badRequest("use GET or POST")
        }
    }

    private func signInAttempt(_ request: RequestFacts, body: [UInt8]) async throws -> APIResponse {
        // A form encodes spaces as `+`.
        let form = RequestFacts.parseQuery(String(decoding: body, as: UTF8.self).replacingOccurrences(of: "+", with: "%20"))
        let login = (form["name"] ?? "").trimmingCharacters(in: .whitespaces)
        let password = form["password"] ?? ""
        let container = form["container"] ?? ""
        let origin = form["origin"] ?? baseURL(request)
        let wantsPage = request.accept?.lowercased().contains("text/html") == true
        // Checked first: a page that may not receive the token gets no token made at all.
        guard mayReceiveToken(origin, request) else { return SignInPage.refusal(origin: origin) }
        let keys = ["user:" + login.lowercased(), "address:" + (request.clientAddress ?? "-")]
        if let wait = signIn.retryAfter(keys) {
            let error = ServerError(.throttled, "too many failed sign-ins; retry after \(wait) s", retryAfter: wait)
            guard wantsPage else { throw error }
            return SignInPage.form(container: container, origin: origin, message: error.reason, status: 429)
        }
        let credential = login.isEmpty ? nil : try await store.passwordCredential(login: login)
        guard await PasswordHashing.verify(password, hash: credential?.hash), let user = credential?.user else {
            signIn.recordFailure(keys)
            // The same answer for a wrong name and a wrong password.
            let error = ServerError(.authenticationFailed, "wrong name or password")
            guard wantsPage else { throw error }
            return SignInPage.form(container: container, origin: origin, message: error.reason, status: 401)
        }
        let (_, token) = try await store.issueToken(userName: user.name, expiresAt: nil)
        return SignInPage.handOff(token: token, origin: origin)
    }

    /// `POST …/private/users/password` `{"currentPassword", "newPassword"}`: a signed-in user
    /// changes its own password (the current one is needed once one is set).
    func changePassword(_ body: JSONValue, user: User) async throws -> JSONValue {
        guard let newPassword = body["newPassword"]?.stringValue else { throw ServerError.badRequest("newPassword is required") }
        if let problem = PasswordHashing.problem(newPassword) { throw ServerError.badRequest(problem) }
        let keys = ["user:" + user.name.lowercased()]
        if let wait = signIn.retryAfter(keys) {
            throw ServerError(.throttled, "too many wrong passwords; retry after \(wait) s", retryAfter: wait)
        }
        if let current = try await store.passwordCredential(login: user.name)?.hash {
            guard await PasswordHashing.verify(body["currentPassword"]?.stringValue ?? "", hash: current) else {
                signIn.recordFailure(keys)
                throw ServerError(.accessDenied, "the current password is wrong")
            }
        }
        _ = try await store.setPasswordHash(userName: user.name, hash: await PasswordHashing.hash(newPassword))
        return ["userRecordName": .string(user.recordName), "passwordChanged": true]
    }

    /// Whether the sign-in page may hand a token to a page of `origin`: an allowed origin, or the
    /// daemon's own (its console).
    func mayReceiveToken(_ origin: String, _ request: RequestFacts) -> Bool {
        signIn.allows(origin) || origin == baseURL(request)
    }

    /// `application/x-www-form-urlencoded` value encoding.
    static func formEncode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? ""
    }
}
