import ArgumentParser
import Foundation
import RecordModel
import RecordStore

/// `scorebookd catalog remove NAME`: the administrator takes an entry out of a container's public
/// game catalogue, whoever published it (a user may only unpublish their own).
struct CatalogAdminCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "catalog", abstract: "The public game catalogue of a container.", subcommands: [Remove.self])

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "remove", abstract: "Remove a game from the public catalogue, whoever published it.",
            discussion: "Games already added from it stay in their books.")
        @Argument(help: "The game's name in the catalogue (any case).") var name: String
        @Option(help: "The container.") var container = "iCloud.scorebook"
        @Option(help: "The environment: production or development.") var environment = "production"
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            guard let environment = Environment(rawValue: environment) else {
                throw CommandFailure(message: "--environment is production or development, not '\(self.environment)'")
            }
            let (name, container) = (self.name, self.container)
            let removed = try await data.withExistingStore { storage in
                try await CatalogRemoval.remove(named: name, container: container, environment: environment, from: storage)
            }
            printJSON(["removed": .string(removed.recordName), "name": .string(removed.name)])
        }
    }
}

enum CatalogRemoval {
    /// The record type of a catalogue entry (the CLI's `CatalogEntry`).
    static let recordType = "CatalogGame"

    /// Deletes the entry whose name is `name` (any case) from the public database, acting as a
    /// server-to-server key does: allowed to change any public record.
    static func remove(named name: String, container: String, environment: Environment,
                       from storage: any RecordStorage) async throws -> (recordName: String, name: String)
    {
        let administrator = User(id: DatabaseScope.publicOwnerID, name: "scorebookd", recordName: "_scorebookd")
        let scope = DatabaseScope.publicDatabase(caller: administrator, container: container, environment: environment, isServerKey: true)
        let wanted = name.trimmingCharacters(in: .whitespaces).lowercased()
        let query = try RecordQuery(json: ["recordType": .string(recordType)])
        var marker: String?
        var found: (recordName: String, name: String)?
        repeat {
            let page: QueryPage
            do {
                page = try await storage.queryRecords(scope, zone: .default, query: query,
                                                      resultsLimit: 200, continuationMarker: marker)
            } catch let error as ServerError where error.code == .zoneNotFound || error.code == .notFound {
                break  // no public database yet: nothing was ever published
            }
            for record in page.records {
                guard let entryName = (try? JSONValue.parse(record.fieldsJSON))?["name"]?["value"]?.stringValue,
                      entryName.lowercased() == wanted
                else { continue }
                found = (record.recordName, entryName)
            }
            marker = page.continuationMarker
        } while marker != nil && found == nil
        guard let found else {
            throw CommandFailure(message: "no game named \"\(name)\" in the catalogue of \(container) (\(environment.rawValue))")
        }
        let results = try await storage.modifyRecords(
            scope, zone: .default, operations: [RecordOperation(type: .forceDelete, record: ["recordName": .string(found.recordName)])],
            atomic: true, deviceID: nil)
        if case .failed(let error)? = results.first {
            throw CommandFailure(message: "the catalogue kept \"\(found.name)\": \(error.reason)")
        }
        return found
    }
}
