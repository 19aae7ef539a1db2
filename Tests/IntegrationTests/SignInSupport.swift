import Foundation

extension DaemonProcess {
    /// `scorebookd user password NAME [--password-file FILE] STORE` with `input` on standard input.
    func setPassword(_ name: String, input: String, file: URL? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        try DaemonProcess.runWithInput("scorebookd", ["user", "password", name] + (file.map { ["--password-file", $0.path] } ?? []) + storeArguments,
                                       input: input)
    }

    /// Runs a built executable with `input` on its standard input.
    static func runWithInput(_ executable: String, _ arguments: [String], input: String) throws -> (status: Int32, stdout: String, stderr: String) {
        try runWithEnvironment(executable, arguments, environment: [:], input: input)
    }

    /// POSTs the sign-in form as a browser does (`address`: the client, as a trusted proxy forwards it).
    func signIn(_ login: String, _ password: String, container: String, origin: String, address: String? = nil, page: Bool = false) throws
        -> HTTPAnswer
    {
        func encode(_ text: String) -> String { text.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "" }
        let form = "container=\(encode(container))&origin=\(encode(origin))&name=\(encode(login))&password=\(encode(password))"
        var headers = [("Content-Type", "application/x-www-form-urlencoded")]
        if let address { headers.append(("X-Forwarded-For", address)) }
        if page { headers.append(("Accept", "text/html")) }
        return try request("POST", "/signin", headers: headers, body: Array(form.utf8))
    }

    /// The token the sign-in answer page posts to its opener, and the origin it posts it to.
    static func handOff(_ answer: HTTPAnswer) -> (token: String, origin: String)? {
        let pattern = #"postMessage\(\{ "ckSession": token \}, origin\)"#
        guard answer.text.range(of: pattern, options: .regularExpression) != nil,
            let token = answer.text.firstMatch(of: #/var token = "([0-9a-f]+)", origin = "([^"]*)";/#)
        else { return nil }
        return (String(token.1), String(token.2))
    }
}
