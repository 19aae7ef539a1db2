import RecordModel

extension RecordClient {
    /// `zones/modify` create. Creating a zone that exists succeeds.
    public func createZone(_ zoneID: ZoneID) async throws {
        try await modifyZone(zoneID, operationType: "create")
    }

    /// `zones/modify` delete: removes the zone and every record in it.
    public func deleteZone(_ zoneID: ZoneID) async throws {
        try await modifyZone(zoneID, operationType: "delete")
    }

    /// `zones/list`: every zone of the user's private database.
    public func listZones() async throws -> [ZoneID] {
        let answer = try await post("zones/list", [:])
        return try answer.requiredArray("zones", in: "zones/list").compactMap { entry in
            entry["zoneID"].flatMap { try? ZoneID(json: $0) }
        }
    }

    private func modifyZone(_ zoneID: ZoneID, operationType: String) async throws {
        let body: JSONValue = [
            "operations": [["operationType": .string(operationType), "zone": ["zoneID": ["zoneName": .string(zoneID.zoneName)]]]],
        ]
        let answer = try await post("zones/modify", body)
        if let entry = answer["zones"]?.arrayValue?.first, let error = ServerError(json: entry) {
            throw RecordClientError.server(error, httpStatus: error.code.httpStatus)
        }
    }
}
