import Foundation
import RecordSync

/// A `scorebookd serve` on a free loopback port, for the test's two machines.
final class Daemon: @unchecked Sendable {
    let binary: String
    let dataDirectory: String
    let process: Process
    let url: URL

    struct Failure: Error, CustomStringConvertible {
        let description: String
    }

    private init(binary: String, dataDirectory: String, process: Process, url: URL) {
        self.binary = binary
        self.dataDirectory = dataDirectory
        self.process = process
        self.url = url
    }

    /// Starts the daemon and waits for its readiness line (`scorebookd listening on http://HOST:PORT`).
    static func start(binary: String, dataDirectory: String) throws -> Daemon {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["serve", "--data-dir", dataDirectory, "--port", "0"]
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        try process.run()
        var line = ""
        let deadline = Date().addingTimeInterval(20)
        while !line.hasSuffix("\n"), Date() < deadline {
            let byte = output.fileHandleForReading.readData(ofLength: 1)
            if byte.isEmpty { break }
            line += String(decoding: byte, as: UTF8.self)
        }
        guard let address = line.split(separator: " ").last.map({ $0.trimmingCharacters(in: .whitespacesAndNewlines) }),
              line.hasPrefix("scorebookd listening on "), let url = URL(string: address)
        else {
            process.terminate()
            throw Failure(description: "scorebookd printed no readiness line (got \(line.debugDescription))")
        }
        return Daemon(binary: binary, dataDirectory: dataDirectory, process: process, url: url)
    }

    /// Creates a user (`scorebookd user create`) and returns its token.
    func createUser(_ name: String) throws -> String {
        let admin = Process()
        admin.executableURL = URL(fileURLWithPath: binary)
        admin.arguments = ["user", "create", name, "--email", "\(name)@example.com", "--data-dir", dataDirectory]
        let output = Pipe()
        admin.standardOutput = output
        try admin.run()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        admin.waitUntilExit()
        guard admin.terminationStatus == 0, let json = try? JSONValue.parse(Array(data)), let token = json["token"]?.stringValue else {
            throw Failure(description: "scorebookd user create exited \(admin.terminationStatus): \(String(decoding: data, as: UTF8.self))")
        }
        return token
    }

    func stop() {
        guard process.isRunning else { return }
        process.terminate()
        process.waitUntilExit()
    }
}
