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
}
