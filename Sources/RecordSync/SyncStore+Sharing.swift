import Foundation

/// A share of another user's zone that invites the account and that it has not accepted.
public struct ShareInvitation: Sendable, Equatable {
    /// The share's short GUID (the last part of its URL).
    public var shortGUID: String
    public var url: String?
    public var zone: String
    /// The owner's user record name.
    public var owner: String
    public var title: String?
    /// `READ_WRITE` or `READ_ONLY`.
    public var permission: String
}

/// Sharing a zone: the owner invites people by email or user record name, an invitee accepts
/// (the zone then syncs into its store with the rest) and may leave. These calls talk to the
/// server at once.
extension SyncStore {
    static let shareRecordName = RecordClient.zoneShareRecordName

    /// A client of the account's server.
    func accountClient() throws(RecordSyncError) -> RecordClient {
        guard let account = try account() else { throw RecordSyncError(.notLoggedIn, "not logged in; call logIn(server:token:) first") }
        return RecordClient(endpoint: account.endpoint, transport: transport)
    }

    /// Shares this (own) zone with `who`, an email address or a user record name, keeping the
    /// people it is shared with already. Returns the share's URL.
    @discardableResult
    public func share(with who: String, readOnly: Bool = false) async throws(RecordSyncError) -> String {
        guard zoneOwner == nil else { throw RecordSyncError(.server, "only the owner can share the zone \(zone)") }
        let client = try accountClient()
        let zoneID = store.book.zoneID
        return try await typed {
            // The zone must exist on the server before its share can: creating it again is harmless.
            try await client.createZone(zoneID)
            let lookup = try await client.call("records/lookup", [
                "zoneID": zoneID.json, "records": [["recordName": .string(Self.shareRecordName)]],
            ], database: "private")
            let existing = lookup["records"]?.arrayValue?.first.flatMap { $0["serverErrorCode"] == nil ? $0 : nil }
            let lookupInfo: JSONValue = who.contains("@") ? ["emailAddress": .string(who)] : ["userRecordName": .string(who)]
            // Everyone invited before but the owner and `who` (invited again with the new permission).
            let kept: [JSONValue] = (existing?["participants"]?.arrayValue ?? []).compactMap { participant in
                let identity = participant["userIdentity"]
                let isWho = identity?["userRecordName"]?.stringValue == who
                    || identity?["lookupInfo"]?["emailAddress"]?.stringValue?.lowercased() == who.lowercased()
                guard participant["type"]?.stringValue != "OWNER", !isWho else { return nil }
                let lookup: JSONValue = identity?["userRecordName"]?.stringValue.map { ["userRecordName": .string($0)] }
                    ?? identity?["lookupInfo"] ?? [:]
                return ["type": "USER", "permission": participant["permission"] ?? "READ_WRITE", "userIdentity": ["lookupInfo": lookup]]
            }
            let participants = kept + [[
                "type": "USER", "permission": .string(readOnly ? "READ_ONLY" : "READ_WRITE"),
                "acceptanceStatus": "PENDING", "userIdentity": ["lookupInfo": lookupInfo],
            ]]
            let title = existing?["fields"]?["cloudkit.title"]?["value"]?.stringValue ?? zone
            let saved = try await client.saveZoneShare(zone: zoneID, title: title, participants: participants, existing: existing)
            return saved["url"]?.stringValue ?? saved["shortGUID"]?.stringValue ?? ""
        }
    }

    /// The shares that invite the account and that it has not accepted.
    public func invitations() async throws(RecordSyncError) -> [ShareInvitation] {
        let client = try accountClient()
        return try await typed {
            let answer = try await client.call("invitations/list", [:], database: "shared")
            return (answer["invitations"]?.arrayValue ?? []).compactMap { entry in
                guard let guid = entry["shortGUID"]?.stringValue, let zone = entry["zoneID"]?["zoneName"]?.stringValue else { return nil }
                return ShareInvitation(
                    shortGUID: guid, url: entry["url"]?.stringValue, zone: zone,
                    owner: entry["zoneID"]?["ownerRecordName"]?.stringValue ?? entry["owner"]?["userRecordName"]?.stringValue ?? "",
                    title: entry["title"]?.stringValue, permission: entry["permission"]?.stringValue ?? "READ_WRITE")
            }
        }
    }

    /// Accepts a share named by its URL or short GUID: its zone joins the file and arrives
    /// with the next sync. Returns a store object on the accepted zone.
    public func accept(_ share: String) async throws(RecordSyncError) -> SyncStore {
        let client = try accountClient()
        let guid = URL(string: share).flatMap { $0.scheme == nil ? nil : $0.lastPathComponent } ?? share
        let (zoneName, owner, title, permission) = try await typed {
            let answer = try await client.call("records/accept", ["shortGUIDs": [["value": .string(guid)]]], database: "public")
            guard let result = answer["results"]?.arrayValue?.first, result["serverErrorCode"] == nil,
                  let zoneName = result["zoneID"]?["zoneName"]?.stringValue
            else { throw RecordSyncError(.server, "no invitation matches \"\(share)\"") }
            return (zoneName, result["zoneID"]?["ownerRecordName"]?.stringValue ?? "",
                    result["share"]?["fields"]?["cloudkit.title"]?["value"]?.stringValue,
                    result["participantPermission"]?.stringValue ?? "READ_WRITE")
        }
        let accepted = try opening(zone: zoneName, owner: owner)
        try typed { try accepted.store.setBookDetails(title: title, role: permission == "READ_ONLY" ? "read-only" : "read-write") }
        return accepted
    }

    /// Leaves this shared zone: the server forgets the account as a participant, and the zone
    /// leaves the file (unsent edits with it).
    public func leave() async throws(RecordSyncError) {
        guard zoneOwner != nil else { throw RecordSyncError(.server, "\(zone) is the account's own zone; it can be deleted, not left") }
        let client = try accountClient()
        let zoneID = store.book.zoneID
        try await typed {
            let answer = try await client.call("records/modify", [
                "zoneID": zoneID.json,
                "operations": [["operationType": "forceDelete", "record": ["recordName": .string(Self.shareRecordName)]]],
            ], database: "shared")
            if let code = answer["records"]?.arrayValue?.first?["serverErrorCode"]?.stringValue, code != "NOT_FOUND" {
                throw RecordSyncError(.server, "the server refused to let the account leave (\(code))")
            }
            try store.forgetBook()
        }
    }

    // MARK: Zones

    /// The zones of the file: the account's own and the shared ones it accepted.
    public func zones() throws(RecordSyncError) -> [(zone: String, owner: String?)] {
        try typed {
            try store.books().filter { !$0.pendingDelete }.map { ($0.book.zoneName, $0.book.scope == .shared ? $0.book.ownerRecordName : nil) }
        }
    }

    /// Deletes this (own) zone here at once, and on the server and every machine at the next sync.
    public func deleteZone() throws(RecordSyncError) {
        guard zoneOwner == nil else { throw RecordSyncError(.server, "\(zone) is shared with the account; leave() it instead") }
        try typed { try store.deleteBookLocally() }
    }
}
