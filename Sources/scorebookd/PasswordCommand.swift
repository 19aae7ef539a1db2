import ArgumentParser
import Foundation
import RecordModel
import RecordServer
import RecordStore

extension UserCommand {
    /// `scorebookd user password NAME [--password-file FILE]`: the password of the daemon's web
    /// sign-in page. Read from a file or standard input (never from the command line, where
    /// other users of the machine could see it); one line, its line ending dropped.
    struct Password: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Set a user's web sign-in password (from standard input, or --password-file).",
            discussion: "The password is the first line of the input; it is stored only as a bcrypt hash.")
        @Argument(help: "The user's name.") var name: String
        @Option(name: .customLong("password-file"), help: "A file whose first line is the password.") var passwordFile: String?
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            let text: String
            if let passwordFile {
                guard let contents = FileManager.default.contents(atPath: passwordFile) else {
                    throw CommandFailure(message: "cannot read the password file \(passwordFile)")
                }
                text = String(decoding: contents, as: UTF8.self)
            } else {
                text = readLine(strippingNewline: false) ?? ""
            }
            let password = String(text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false).first ?? "")
                .trimmingCharacters(in: CharacterSet(charactersIn: "\r"))
            if let problem = PasswordHashing.problem(password) { throw CommandFailure(message: problem) }
            let hash = await PasswordHashing.hash(password)
            let name = name
            let user = try await data.withExistingStore { try await $0.setPasswordHash(userName: name, hash: hash) }
            printJSON(["userRecordName": .string(user.recordName), "name": .string(user.name), "passwordSet": true])
        }
    }
}
