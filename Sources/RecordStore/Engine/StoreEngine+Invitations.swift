import RecordModel

extension StoreEngine {
    /// `shared/invitations/decline`: the caller turns down the invitations behind `shortGUIDs`.
    /// Its participant row is kept as `REMOVED`, so the owner sees the answer and the owner's next
    /// save of the share does not invite it again; the zone never reaches its shared database.
    /// A link that does not invite the caller, or whose invitation it already accepted, is
    /// `NOT_FOUND`, as for resolve.
    package func declineInvitations(_ scope: DatabaseScope, shortGUIDs: [String]) async throws -> [Result<JSONValue, ServerError>] {
        guard shortGUIDs.count <= StoreLimits.maximumOperations else {
            throw ServerError(.limitExceeded, "at most \(StoreLimits.maximumOperations) shortGUIDs per request")
        }
        return try await driver.write { connection in
            guard let caller = try await self.user(id: scope.userID, connection) else { throw ServerError(.authenticationFailed, "unknown user") }
            var results: [Result<JSONValue, ServerError>] = []
            for guid in shortGUIDs {
                let found = try await connection.first(
                    """
                    SELECT s.zone_id, d.id FROM shares s JOIN zones z ON z.id = s.zone_id AND z.deleted = 0
                    JOIN databases d ON d.id = z.database_id AND d.container = ? AND d.environment = ? WHERE s.short_guid = ?
                    """, [.text(scope.container), .text(scope.environment.rawValue), .text(guid)])
                guard let found else {
                    results.append(.failure(ShareRules.unknownShare(guid)))
                    continue
                }
                // As every change of a share's members: under the owner's lock.
                try await self.lockDatabase(found.int(1), connection)
                guard let participant = try await self.loadParticipants(zoneRowID: found.int(0), connection)
                    .first(where: { $0.invites(caller) && $0.status == .invited })
                else {
                    results.append(.failure(ShareRules.unknownShare(guid)))
                    continue
                }
                try await connection.execute(
                    "UPDATE share_participants SET user_id = ?, status = 'REMOVED' WHERE zone_id = ? AND participant_id = ?",
                    [.int(caller.id), .int(found.int(0)), .text(participant.participantID)])
                results.append(.success(["shortGUID": .string(guid), "participantStatus": "REMOVED"]))
            }
            return results
        }
    }
}
