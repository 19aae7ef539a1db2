import ArgumentParser
import Foundation
import RecordModel
import RecordServer
import RecordStore

/// `scorebookd webhook …`: server-side subscribers, on either backend, whether or not a daemon
/// serves the store (a serving daemon delivers to an endpoint from its next change on).
struct WebhookCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "webhook", abstract: "Manage webhooks: HTTP endpoints that receive every record change and deletion.",
        discussion: "Events are signed the Standard Webhooks way (webhook-id, webhook-timestamp, webhook-signature); see docs/api/webhooks.md.",
        subcommands: [Add.self, List.self, Remove.self, Enable.self, Disable.self, Deliveries.self, Replay.self])

    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register an endpoint and print {webhookID, secret} (the secret is shown only here).",
            discussion: "Without filters the endpoint receives every change of every container. Targets on loopback, link-local and "
                + "private addresses are delivered to only by a daemon started with --allow-private-webhooks.")
        @Argument(help: "The http:// or https:// URL events are POSTed to.") var url: String
        @Option(help: "Only this container.") var container: String?
        @Option(help: "Only this environment: development or production.") var environment: String?
        @Option(help: "Only the zone of this name.") var zone: String?
        @Option(name: .customLong("record-type"), help: "Only records of this type.") var recordType: String?
        @Option(help: "changed, deleted or changed,deleted (deleted includes zone deletions).") var events = "changed,deleted"
        @Option(help: "The fields a record.changed event carries: none, all, or a comma-separated list of names.") var fields = "all"
        @Option(name: .customLong("secret-file"), help: "A file holding the secret to sign with (whsec_ and base64); default: a new random one.")
        var secretFile: String?
        // `--database` is both the filter (private, shared, public) and, as for every command, a
        // PostgreSQL store (a URL): told apart by the value, so either may come first.
        @Option(name: .customLong("data-dir"),
                help: "The directory holding the embedded SQLite store (also env SCOREBOOK_DATA_DIR; default $XDG_DATA_HOME/scorebookd, ~/.local/share/scorebookd).")
        var dataDirectory: String?
        @Option(name: .customLong("database"),
                help: "private, shared (zones with a share) or public: only that database. A postgres:// URL: the PostgreSQL store (also env SCOREBOOK_DATABASE_URL).")
        var databaseArguments: [String] = []

        /// The `--database` value that filters, if any.
        var database: String? { databaseArguments.first { DatabaseKind(rawValue: $0) != nil } }

        /// The store, as every other command reads it.
        var data: DataDirectoryOption {
            get throws {
                var arguments = dataDirectory.map { ["--data-dir", $0] } ?? []
                for value in databaseArguments where DatabaseKind(rawValue: value) == nil { arguments += ["--database", value] }
                return try DataDirectoryOption.parse(arguments)
            }
        }

        func validate() throws {
            if let environment, Environment(rawValue: environment) == nil { throw ValidationError("--environment must be development or production") }
            let filters = databaseArguments.filter { DatabaseKind(rawValue: $0) != nil }
            let stores = databaseArguments.filter { DatabaseKind(rawValue: $0) == nil }
            guard filters.count <= 1, stores.count <= 1 else {
                throw ValidationError("give --database once as a filter (private, shared or public) and at most once as the store's URL")
            }
            if let store = stores.first, !store.contains("://") {
                throw ValidationError("--database must be private, shared or public (a filter), or a postgres:// URL (the store)")
            }
            try data.validate()
            do {
                _ = try WebhookTarget(url: url)
                _ = try WebhookEventKind.parse(events)
                _ = try WebhookFields.parse(fields)
                if let container { try DatabaseScope.validateContainer(container) }
            } catch let error as ServerError {
                throw ValidationError(error.reason)
            }
        }

        func readSecret() throws -> String? {
            guard let secretFile else { return nil }
            guard let contents = FileManager.default.contents(atPath: secretFile) else { throw CommandFailure(message: "cannot read secret file \(secretFile)") }
            let secret = String(decoding: contents, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
            guard Webhook.signingKey(secret) != nil else {
                throw CommandFailure(message: "\(secretFile) must hold whsec_ followed by the base64 of at least 16 bytes")
            }
            return secret
        }

        func run() async throws {
            var webhook = Webhook(url: url, container: container, environment: environment.flatMap(Environment.init(rawValue:)),
                                  database: database.flatMap(DatabaseKind.init(rawValue:)), zone: zone, recordType: recordType,
                                  events: try WebhookEventKind.parse(events), fields: try WebhookFields.parse(fields))
            if let secret = try readSecret() { webhook.secret = secret }
            if try WebhookTarget(url: url).namesPrivateHost {
                FileHandle.standardError.write(Data("scorebookd: note: \(url) is a loopback or private address; only a daemon started with --allow-private-webhooks delivers to it\n".utf8))
            }
            let endpoint = webhook
            let store = try data
            let added = try await store.withExistingStore { try await $0.engine.addWebhook(endpoint) }
            printJSON(["webhookID": .string(added.id), "secret": .string(added.secret)])
        }
    }

    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "List endpoints: ID, STATE (enabled, or disabled and why), PENDING events, FILTER, URL.")
        @Flag(help: "Print a JSON array of the endpoints (webhookID, url, filters, enabled, disabledReason, pending) instead of a table.")
        var json = false
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            let (webhooks, pending) = try await data.withExistingStore { store in
                (try await store.engine.webhooks(), try await store.engine.pendingWebhookEvents())
            }
            if json {
                let entries: [JSONValue] = webhooks.map { webhook in
                    guard case .object(var members) = webhook.json else { return webhook.json }
                    members["pending"] = .int(Int64(pending[webhook.id] ?? 0))
                    if let owner = webhook.ownerUserID { members["ownerUserID"] = .int(owner) }
                    return .object(members)
                }
                print(JSONValue.array(entries).serializedString())
                return
            }
            let rows = [["ID", "STATE", "PENDING", "FILTER", "URL"]] + webhooks.map { webhook in
                [webhook.id, webhook.enabled ? "enabled" : "disabled" + (webhook.disabledReason.map { " (\($0))" } ?? ""),
                 String(pending[webhook.id] ?? 0), List.filter(webhook), webhook.url]
            }
            let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
            for row in rows {
                print(((0..<4).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) } + [row[4]]).joined(separator: "  "))
            }
        }

        /// `container=… zone=… events=changed` (`*`: everything).
        static func filter(_ webhook: Webhook) -> String {
            var parts: [String] = []
            if let owner = webhook.ownerUserID { parts.append("user=\(owner)") }
            for (name, value) in [("container", webhook.container), ("environment", webhook.environment?.rawValue),
                                  ("database", webhook.database?.rawValue), ("zone", webhook.zone), ("type", webhook.recordType)] {
                if let value { parts.append("\(name)=\(value)") }
            }
            if webhook.events != [.changed, .deleted] { parts.append("events=" + webhook.events.map(\.rawValue).sorted().joined(separator: ",")) }
            if webhook.fields != .all { parts.append("fields=\(webhook.fields.text)") }
            return parts.isEmpty ? "*" : parts.joined(separator: " ")
        }
    }

    struct Remove: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "Remove an endpoint, with its undelivered events and its history.")
        @Argument(help: "The webhook's id (wh_…).") var id: String
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            let id = id
            try await data.withExistingStore { try await $0.engine.removeWebhook(id: id) }
            printJSON(["webhookID": .string(id), "removed": true])
        }
    }

    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Enable an endpoint: its waiting events are delivered, the first at once.")
        @Argument(help: "The webhook's id (wh_…).") var id: String
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            let id = id
            try await data.withExistingStore { try await $0.engine.setWebhookEnabled(id: id, true) }
            printJSON(["webhookID": .string(id), "enabled": true])
        }
    }

    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Disable an endpoint: nothing is delivered to it; its events keep queueing (a week at most) until it is enabled.")
        @Argument(help: "The webhook's id (wh_…).") var id: String
        @OptionGroup var data: DataDirectoryOption

        func run() async throws {
            let id = id
            try await data.withExistingStore { try await $0.engine.setWebhookEnabled(id: id, false, reason: "disabled by an operator") }
            printJSON(["webhookID": .string(id), "enabled": false])
        }
    }

    struct Deliveries: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Recent delivery attempts, newest first: TIME (UTC), EVENT, STATUS, LATENCY, ERROR.")
        @Argument(help: "The webhook's id (wh_…).") var id: String
        @Flag(help: "Only attempts that did not deliver.") var failed = false
        @Option(help: "At most this many attempts.") var limit = 50
        @Flag(help: "Print a JSON array of {time, eventID, status, latencyMilliseconds, error} instead of a table.") var json = false
        @OptionGroup var data: DataDirectoryOption

        func validate() throws {
            guard (1...10_000).contains(limit) else { throw ValidationError("--limit must be 1-10000") }
        }

        func run() async throws {
            let (id, failed, limit) = (id, failed, limit)
            let attempts = try await data.withExistingStore { try await $0.engine.webhookAttempts(id: id, failedOnly: failed, limit: limit) }
            if json {
                printJSONArray(attempts.map { attempt in
                    ["time": .string(UserCommand.List.timestamp(attempt.attemptedAt)), "eventID": .string(attempt.eventID),
                     "status": .int(Int64(attempt.status)), "latencyMilliseconds": .int(attempt.latencyMilliseconds),
                     "error": attempt.error.map { .string($0) } ?? .null]
                })
                return
            }
            let rows = [["TIME", "EVENT", "STATUS", "LATENCY", "ERROR"]] + attempts.map { attempt in
                [UserCommand.List.timestamp(attempt.attemptedAt), attempt.eventID, attempt.status == 0 ? "-" : String(attempt.status),
                 "\(attempt.latencyMilliseconds) ms", attempt.error ?? ""]
            }
            let widths = (0..<4).map { column in rows.map { $0[column].count }.max() ?? 0 }
            for row in rows {
                print(((0..<4).map { row[$0].padding(toLength: widths[$0], withPad: " ", startingAt: 0) } + [row[4]]).joined(separator: "  "))
            }
        }
    }

    struct Replay: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Send an endpoint's events again, with their ids, from a time or a zone's sync token on; print how many.",
            discussion: "Events are kept a week after delivery. --since takes a zone sync token (events of that zone after it), "
                + "an ISO 8601 time such as 2026-11-28T10:00:00Z, or Unix seconds.")
        @Argument(help: "The webhook's id (wh_…).") var id: String
        @Option(help: "SYNCTOKEN, ISO 8601 time or Unix seconds.") var since: String
        @OptionGroup var data: DataDirectoryOption

        /// The time `since` names, or nil when it is a sync token.
        static func milliseconds(_ since: String) -> Int64? {
            if let seconds = Int64(since), seconds >= 0, seconds < 100_000_000_000 { return seconds * 1000 }
            let formatter = ISO8601DateFormatter()
            if let date = formatter.date(from: since) { return Int64(date.timeIntervalSince1970 * 1000) }
            formatter.formatOptions.insert(.withFractionalSeconds)
            return formatter.date(from: since).map { Int64($0.timeIntervalSince1970 * 1000) }
        }

        func run() async throws {
            let id = id
            let start: WebhookReplayStart = Replay.milliseconds(since).map { .timestamp($0) } ?? .syncToken(since)
            let since = since
            let queued = try await data.withExistingStore { store in
                do {
                    return try await store.engine.replayWebhook(id: id, from: start)
                } catch let error as ServerError where error.code == .badRequest {
                    throw CommandFailure(message: "--since '\(since)' is neither a time (ISO 8601 or Unix seconds) nor a zone sync token of this store")
                }
            }
            printJSON(["webhookID": .string(id), "queued": .int(Int64(queued))])
        }
    }
}
