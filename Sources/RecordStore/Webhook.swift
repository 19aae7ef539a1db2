import Foundation
import RecordModel

/// A server-side subscriber: an HTTP endpoint that receives every record change and deletion its
/// filters select, signed the Standard Webhooks way. An operator's endpoint (`ownerUserID` nil)
/// may cover whole containers; a user's (`webhooks/modify`) covers only that user's own zones.
package struct Webhook: Sendable, Equatable {
    package var id: String
    package var url: String
    /// `whsec_<base64 key>`; the HMAC key is the decoded part.
    package var secret: String
    package var ownerUserID: Int64?
    package var container: String?
    package var environment: Environment?
    package var database: DatabaseKind?
    package var zone: String?
    package var recordType: String?
    package var events: Set<WebhookEventKind>
    package var fields: WebhookFields
    package var enabled: Bool
    /// Why the daemon disabled it (nil: enabled, or disabled by an operator).
    package var disabledReason: String?
    package var createdAt: Int64

    package init(id: String = Webhook.newID(), url: String, secret: String = Webhook.newSecret(), ownerUserID: Int64? = nil,
                 container: String? = nil, environment: Environment? = nil, database: DatabaseKind? = nil, zone: String? = nil,
                 recordType: String? = nil, events: Set<WebhookEventKind> = [.changed, .deleted], fields: WebhookFields = .all,
                 enabled: Bool = true, disabledReason: String? = nil, createdAt: Int64 = 0)
    {
        self.id = id
        self.url = url
        self.secret = secret
        self.ownerUserID = ownerUserID
        self.container = container
        self.environment = environment
        self.database = database
        self.zone = zone
        self.recordType = recordType
        self.events = events
        self.fields = fields
        self.enabled = enabled
        self.disabledReason = disabledReason
        self.createdAt = createdAt
    }

    package static func newID() -> String { "wh_" + WebhookRules.randomHex(12) }

    /// A Standard Webhooks secret: `whsec_` and the base64 of 24 random bytes.
    package static func newSecret() -> String {
        var generator = SystemRandomNumberGenerator()
        return "whsec_" + Data((0..<24).map { _ in UInt8.random(in: 0...255, using: &generator) }).base64EncodedString()
    }

    /// The HMAC key of a secret: the base64 after `whsec_` (a secret without the prefix is decoded
    /// whole, as the Standard Webhooks libraries do); nil when it is not base64 or too short.
    package static func signingKey(_ secret: String) -> [UInt8]? {
        let encoded = secret.hasPrefix("whsec_") ? String(secret.dropFirst(6)) : secret
        guard let key = Data(base64Encoded: encoded), key.count >= 16 else { return nil }
        return Array(key)
    }

    /// The endpoint's definition without its secret, as `webhook list` and `webhooks/list` show it.
    package var json: JSONValue {
        var members: [String: JSONValue] = [
            "webhookID": .string(id), "url": .string(url), "events": .array(WebhookEventKind.allCases.filter(events.contains).map { .string($0.rawValue) }),
            "fields": fields.json, "enabled": .bool(enabled), "createdAt": .int(createdAt),
        ]
        if let container { members["container"] = .string(container) }
        if let environment { members["environment"] = .string(environment.rawValue) }
        if let database { members["database"] = .string(database.rawValue) }
        if let zone { members["zone"] = .string(zone) }
        if let recordType { members["recordType"] = .string(recordType) }
        if let disabledReason { members["disabledReason"] = .string(disabledReason) }
        return .object(members)
    }

    /// Whether a change of `kind` to a record of `recordType` (nil: a zone deletion) in `zone` of
    /// the database `scope` (the zone owner's) is for this endpoint. `zoneIsShared`: the zone has
    /// a share, so it is also in its participants' shared databases.
    package func selects(_ kind: WebhookEventKind, recordType: String?, zone zoneName: String, scope: DatabaseScope, zoneIsShared: Bool) -> Bool {
        guard events.contains(kind) else { return false }
        if let container, container != scope.container { return false }
        if let environment, environment != scope.environment { return false }
        if let ownerUserID, scope.kind != .private || ownerUserID != scope.userID { return false }
        switch database {
        case nil: break
        case .private?: if scope.kind != .private { return false }
        case .public?: if scope.kind != .public { return false }
        case .shared?: if scope.kind != .private || !zoneIsShared { return false }
        }
        if let zone, zone != zoneName { return false }
        if let wanted = self.recordType, let recordType, wanted != recordType { return false }
        return true
    }
}

/// What an endpoint subscribes to (`--events changed,deleted`): `deleted` brings record deletions
/// and zone deletions.
package enum WebhookEventKind: String, Sendable, CaseIterable {
    case changed, deleted

    package static func parse(_ text: String) throws -> Set<WebhookEventKind> {
        var kinds = Set<WebhookEventKind>()
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let kind = WebhookEventKind(rawValue: part.trimmingCharacters(in: .whitespaces)) else {
                throw ServerError.badRequest("events must be changed, deleted or changed,deleted (not '\(part)')")
            }
            kinds.insert(kind)
        }
        return kinds
    }
}

/// Which fields a `record.changed` event carries (`--fields none|all|NAMES`).
package enum WebhookFields: Sendable, Equatable {
    case none, all
    case names([String])

    package static func parse(_ text: String) throws -> WebhookFields {
        switch text {
        case "none": return .none
        case "all": return .all
        default:
            let names = text.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
            guard !names.isEmpty else { throw ServerError.badRequest("fields must be none, all or a comma-separated list of field names") }
            return .names(names)
        }
    }

    /// As stored and shown: `none`, `all`, or the names joined by commas.
    package var text: String {
        switch self {
        case .none: return "none"
        case .all: return "all"
        case .names(let names): return names.joined(separator: ",")
        }
    }

    var json: JSONValue {
        switch self {
        case .none, .all: return .string(text)
        case .names(let names): return .array(names.map { .string($0) })
        }
    }
}

/// One event to deliver, leased to this daemon.
package struct WebhookDelivery: Sendable {
    /// The change's zone sequence (delivery order within the stream).
    package var sequence: Int64
    /// The event's stable `id` (`webhook-id`): the receiver de-duplicates by it.
    package var eventID: String
    /// The JSON body, exactly as signed and sent.
    package var body: [UInt8]
    /// Attempts made before this one.
    package var attempts: Int
    /// When the first failed attempt was (nil: none failed yet).
    package var firstFailedAt: Int64?
}

/// Events of one endpoint and zone, in order, leased to this daemon until `leaseUntil`.
package struct WebhookStreamClaim: Sendable {
    package var webhook: Webhook
    /// The zone's row id.
    package var stream: Int64
    package var events: [WebhookDelivery]
    /// The zone sequence the claim read up to: the stream's position once every event is delivered.
    package var through: Int64
    package var leaseUntil: Int64
}

/// An endpoint and zone with events to deliver, and its position when read.
package struct WebhookStreamHead: Sendable, Hashable {
    package var webhookID: String
    /// The zone's row id.
    package var stream: Int64
    /// The zone sequence delivered up to.
    package var position: Int64
}

/// One delivery attempt, as `webhook deliveries` shows it.
package struct WebhookAttempt: Sendable, Equatable {
    package var eventID: String
    package var attemptedAt: Int64
    /// The HTTP status, 0 when there was none (refused, timed out, connection failed).
    package var status: Int
    package var latencyMilliseconds: Int64
    package var error: String?

    package init(eventID: String, attemptedAt: Int64, status: Int, latencyMilliseconds: Int64, error: String?) {
        self.eventID = eventID
        self.attemptedAt = attemptedAt
        self.status = status
        self.latencyMilliseconds = latencyMilliseconds
        self.error = error
    }

    package var succeeded: Bool { (200...299).contains(status) && error == nil }
}

/// How a claimed stream's delivery ended, for `StoreEngine.finishWebhookStream`.
package struct WebhookStreamOutcome: Sendable {
    /// The sequences of the events delivered (2xx), in order.
    package var delivered: [Int64] = []
    /// The event that failed, with when to try it again (nil: none failed).
    package var failed: (sequence: Int64, retryAt: Int64)?
    /// Every attempt made, for `webhook deliveries`.
    package var attempts: [WebhookAttempt] = []

    package init() {}
}

/// Where `webhook replay` starts.
package enum WebhookReplayStart: Sendable {
    /// Events created at or after this time (milliseconds since 1970).
    case timestamp(Int64)
    /// Events of the token's zone after the position the token names.
    case syncToken(String)
}

/// The rules of webhook events: what an event's body says.
package enum WebhookRules {
    /// A change as the outbox writes it.
    struct Event {
        var type: String
        var recordName: String?
        var recordType: String?
        var changeTag: String?
        var sequence: Int64
        /// The record's fields JSON (changed events only).
        var fieldsJSON: [UInt8]?
    }

    package static func randomHex(_ count: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return SHA256Hasher.hex((0..<count).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    /// An event's id: `evt_` and its zone's row id and sequence in base 36 (`evt_5-2s`), the same
    /// for every endpoint it goes to and every time it is sent again.
    static func eventID(zoneRowID: Int64, sequence: Int64) -> String { "evt_" + RecordRules.changeTag(zoneRowID: zoneRowID, sequence: sequence) }

    /// What every event of one transaction shares: `,"timestamp":…,"data":{"container":…,"owner":…`
    /// (one zone of one database, one commit time), written once for all of them.
    static func sharedMembers(timestamp: Int64, scope: DatabaseScope, zone: String) -> [UInt8] {
        var out: [UInt8] = []
        out.append(contentsOf: ",\"timestamp\":".utf8)
        JSONValue.appendString(isoTimestamp(milliseconds: timestamp), to: &out)
        out.append(contentsOf: ",\"data\":{\"container\":".utf8)
        JSONValue.appendString(scope.container, to: &out)
        for (key, value) in [("environment", scope.environment.rawValue), ("database", scope.kind.rawValue), ("zone", zone),
                             ("owner", scope.zoneOwnerRecordName)] {
            out.append(contentsOf: ",\"\(key)\":".utf8)
            JSONValue.appendString(value, to: &out)
        }
        return out
    }

    /// The event's body: `{"type", "id", "timestamp", "data": {…}}`, its keys always in this order
    /// (`shared`: `sharedMembers` of its transaction).
    static func body(_ event: Event, id: String, shared: [UInt8], syncToken: String, fields: WebhookFields) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(shared.count + 160 + (event.fieldsJSON?.count ?? 0))
        out.append(contentsOf: "{\"type\":\"".utf8)
        out.append(contentsOf: event.type.utf8)  // one of three names, nothing to escape
        out.append(contentsOf: "\",\"id\":\"".utf8)
        out.append(contentsOf: id.utf8)  // evt_ and base-36 digits
        out.append(UInt8(ascii: "\""))
        out.append(contentsOf: shared)
        if let recordName = event.recordName {
            out.append(contentsOf: ",\"recordName\":".utf8)
            JSONValue.appendString(recordName, to: &out)
        }
        if let recordType = event.recordType {
            out.append(contentsOf: ",\"recordType\":".utf8)
            JSONValue.appendString(recordType, to: &out)
        }
        if let changeTag = event.changeTag {
            out.append(contentsOf: ",\"recordChangeTag\":".utf8)
            JSONValue.appendString(changeTag, to: &out)
        }
        out.append(contentsOf: ",\"syncToken\":".utf8)
        JSONValue.appendString(syncToken, to: &out)
        if let fieldsJSON = event.fieldsJSON {
            switch fields {
            case .none: break
            case .all:
                out.append(contentsOf: ",\"fields\":".utf8)
                if fieldsJSON.isEmpty { out.append(contentsOf: "{}".utf8) } else { out.append(contentsOf: fieldsJSON) }
            case .names(let names):
                out.append(contentsOf: ",\"fields\":".utf8)
                var chosen: [String: JSONValue] = [:]
                if case .object(let all)? = try? JSONValue.parse(fieldsJSON) {
                    for name in names { if let value = all[name] { chosen[name] = value } }
                }
                JSONValue.object(chosen).serialize(into: &out)
            }
        }
        out.append(contentsOf: "}}".utf8)
        return out
    }

    /// `2026-11-28T22:52:34.123Z`: the event's time in UTC, as Standard Webhooks' examples write it.
    static func isoTimestamp(milliseconds: Int64) -> String {
        var seconds = time_t(milliseconds / 1000)
        var parts = tm()
        gmtime_r(&seconds, &parts)
        let millis = Int(milliseconds % 1000)
        func pad(_ value: Int32, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        let fraction = String(millis + 1000).dropFirst()
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(fraction)Z"
    }

    /// How long to wait before attempt `attempt + 1` after `attempt` failures: `base` doubled per
    /// failure up to an hour, times a random factor in 0.5-1.5 so endpoints that failed together
    /// are not all retried at the same moment.
    package static func retryDelay(afterFailures attempt: Int, baseMilliseconds: Int64) -> Int64 {
        let capped = min(Double(baseMilliseconds) * pow(2, Double(max(0, attempt - 1))), 3_600_000)
        return Int64(capped * Double.random(in: 0.5...1.5))
    }
}
