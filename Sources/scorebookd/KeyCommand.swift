import ArgumentParser
import Foundation
import RecordModel

/// `scorebookd key add --public-key FILE.pem [--name LABEL] STORE`.
struct KeyCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "key", abstract: "Manage server-to-server keys (signed requests to the public database).", subcommands: [Add.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a P-256 public key (PEM) and print its key id.",
            discussion: "Make a key with `openssl ecparam -name prime256v1 -genkey -noout -out key.pem`; its public half is read "
                + "from the private key file, or give `openssl ec -in key.pem -pubout` output.")
        @Option(name: .customLong("public-key"), help: "PEM file of the P-256 key.") var publicKey: String
        @Option(help: "A label for the key.") var name: String?
        @OptionGroup var data: DataDirectoryOption

        /// The PEM text, or one line saying why not.
        func readPEM() throws -> String {
            guard let contents = FileManager.default.contents(atPath: publicKey) else {
                throw CommandFailure(message: "cannot read key file \(publicKey)")
            }
            return String(decoding: contents, as: UTF8.self)
        }

        func run() async throws {
            let (pem, name) = (try readPEM(), name)
            printJSON(["keyID": .string(try await data.withExistingStore { try await $0.addServerKey(pem: pem, name: name) })])
        }
    }
}
