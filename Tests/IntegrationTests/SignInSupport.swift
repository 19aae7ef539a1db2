import Foundation
import XCTest

extension DaemonProcess {
    /// `scorebookd user password NAME [--password-file FILE] STORE` with `input` on standard input.
    func setPassword(_ name: String, input: String, file: URL? = nil) throws -> (status: Int32, stdout: String, stderr: String) {
        try DaemonProcess.runWithInput("scorebookd", ["user", "password", name] + (file.map { ["--password-file", $0.path] } ?? []) + storeArguments,
                                       input: input)
    }

    /// Runs a built executable with `input` on its standard input (bounded wait, then killed).
    static func runWithInput(_ executable: String, _ arguments: [String], input: String, timeout: TimeInterval = 30) throws
        -> (status: Int32, stdout: String, stderr: String)
    {
        let process = Process()
        process.executableURL = binaryURL(executable)
        process.arguments = arguments
        let stdin = Pipe(), stdout = Pipe(), stderr = Pipe()
        (process.standardInput, process.standardOutput, process.standardError) = (stdin, stdout, stderr)
        try process.run()
        stdin.fileHandleForWriting.write(Data(input.utf8))
        try stdin.fileHandleForWriting.close()
        let out = PipeCollector(stdout.fileHandleForReading), err = PipeCollector(stderr.fileHandleForReading)
        guard waitForExit(process, timeout: timeout) else {
            sendSignal(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw DaemonError("\(executable) \(arguments.joined(separator: " ")) did not finish within \(Int(timeout)) s")
        }
        _ = out.waitForEOF(timeout: 5)
        _ = err.waitForEOF(timeout: 5)
        return (process.terminationStatus, out.text, err.text)
    }
}
