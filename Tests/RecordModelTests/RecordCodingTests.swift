import XCTest

@testable import RecordModel

/// The CloudKit wire form of records and field values: types given, decided by a
/// schema or inferred; normalisation; names; and the round trip of a record through its JSON.
final class RecordCodingTests: XCTestCase {
    func fieldValue(_ json: JSONValue, schema: FieldType? = nil) throws -> FieldValue {
        try FieldValue(json: json, fieldName: "f", schemaType: schema)
    }

    func testEveryWireTypeNameRoundTrips() {
        let names = ["STRING", "INT64", "DOUBLE", "TIMESTAMP", "BYTES", "REFERENCE", "LOCATION", "ASSETID"]
        for name in names + names.map({ $0 + "_LIST" }) {
            XCTAssertEqual(FieldType(wireName: name)?.wireName, name)
        }
        for bad in ["", "string", "INT", "STRING_LIST_LIST", "_LIST", "LIST"] { XCTAssertNil(FieldType(wireName: bad), bad) }
    }

    func testAnExplicitTypeWinsOverSchemaAndInference() throws {
        XCTAssertEqual(try fieldValue(["value": 5, "type": "DOUBLE"], schema: .int64), .double(5))
        XCTAssertEqual(try fieldValue(["value": 5, "type": "TIMESTAMP"]), .timestamp(milliseconds: 5))
        XCTAssertEqual(try fieldValue(["value": 5, "type": nil], schema: .double).type, .double, "a null type is an omitted one")
    }

    func testWithoutATypeTheSchemaDecides() throws {
        XCTAssertEqual(try fieldValue(["value": 1_763_800_000_000], schema: .timestamp), .timestamp(milliseconds: 1_763_800_000_000))
        XCTAssertEqual(try fieldValue(["value": 3], schema: .double), .double(3))
        XCTAssertEqual(try fieldValue(["value": 4.0], schema: .int64), .int64(4), "a whole double fits an INT64 field")
        XCTAssertEqual(try fieldValue(["value": "AAE="], schema: .bytes).bytesValue, [0, 1])
        XCTAssertEqual(try fieldValue(["value": ["x", "y"]], schema: .list(.string)), .stringList(["x", "y"]))
        XCTAssertEqual(try fieldValue(["value": []], schema: .list(.int64)), .int64List([]), "an empty list is fine when the type is known")
    }

    func testWithoutTypeOrSchemaTheTypeIsInferred() throws {
        XCTAssertEqual(try fieldValue(["value": "x"]).type, .string)
        XCTAssertEqual(try fieldValue(["value": 1]).type, .int64)
        XCTAssertEqual(try fieldValue(["value": true]), .int64(1), "a boolean is an INT64 0 or 1")
        XCTAssertEqual(try fieldValue(["value": 1.5]).type, .double)
        XCTAssertEqual(try fieldValue(["value": ["recordName": "r"]]).type, .reference)
        XCTAssertEqual(try fieldValue(["value": ["latitude": 1, "longitude": 2]]).type, .location)
        XCTAssertEqual(try fieldValue(["value": ["a"]]).type, .list(.string))
        XCTAssertEqual(try fieldValue(["value": [["recordName": "r", "action": "DELETE_SELF"]]]).type, .list(.reference))
        for uninferable: JSONValue in [["value": []], ["value": ["other": 1]], ["value": [[1]]]] {
            XCTAssertThrowsError(try fieldValue(uninferable), uninferable.serializedString()) {
                XCTAssertEqual(($0 as? ServerError)?.code, .badRequest)
            }
        }
    }

    func testValuesThatDoNotFitTheirTypeAreBadRequestNamingTheField() {
        let bad: [JSONValue] = [
            ["value": "x", "type": "INT64"], ["value": 1.5, "type": "INT64"], ["value": 1, "type": "STRING"],
            ["value": "not base64!", "type": "BYTES"], ["value": "x", "type": "DOUBLE"], ["value": true, "type": "TIMESTAMP"],
            ["value": ["latitude": 0], "type": "LOCATION"], ["value": ["latitude": 0, "longitude": 181], "type": "LOCATION"],
            ["value": "r", "type": "REFERENCE"], ["value": ["recordName": "_r"], "type": "REFERENCE"],
            ["value": [1, "x"], "type": "INT64_LIST"], ["value": 1, "type": "INT64_LIST"], ["value": 1, "type": "ASSETID"],
            ["value": 1, "type": 5], ["value": 1, "type": "WHATEVER"], ["type": "STRING"], "just a string", nil,
        ]
        for json in bad {
            XCTAssertThrowsError(try FieldValue(json: json, fieldName: "score", schemaType: nil), json.serializedString()) { error in
                XCTAssertEqual((error as? ServerError)?.code, .badRequest)
                let isReferenceOrLocation = ["REFERENCE", "LOCATION"].contains(json["type"]?.stringValue ?? "")
                if !isReferenceOrLocation {
                    XCTAssertTrue((error as? ServerError)?.reason.contains("score") ?? false, "the reason names the field: \(error)")
                }
            }
        }
    }

    func testReferencesAndLocations() throws {
        let reference = try Reference(json: ["recordName": "Game|~|1"])
        XCTAssertEqual(reference.action, .none, "the action defaults to NONE")
        XCTAssertEqual(reference.json, ["recordName": "Game|~|1", "action": "NONE"])
        XCTAssertEqual(try Reference(json: ["recordName": "g", "action": "VALIDATE", "zoneID": ["zoneName": "Z"]]).action, .validate)
        XCTAssertThrowsError(try Reference(json: ["recordName": "g", "action": "delete_self"]))
        XCTAssertThrowsError(try Reference(json: ["recordName": 5]))

        let location = try Location(json: ["latitude": 47.6, "longitude": -122.3, "altitude": 12, "unknown": "dropped", "speed": "fast"])
        XCTAssertEqual(location.extra, ["altitude": .double(12)], "known numeric extras are kept, others dropped")
        XCTAssertEqual(try Location(json: location.json), location)
        XCTAssertThrowsError(try Location(json: ["latitude": -90.1, "longitude": 0]))

        let list = FieldValue.referenceList([Reference(recordName: "a", action: .deleteSelf), Reference(recordName: "b")])
        XCTAssertEqual(list.references.map(\.recordName), ["a", "b"])
        XCTAssertEqual(FieldValue.string("x").references, [])
    }

    func testNames() {
        XCTAssertNoThrow(try Names.validateRecordName("Game|~|9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D"))
        XCTAssertNoThrow(try Names.validateRecordName(String(repeating: "x", count: 255)))
        XCTAssertNoThrow(try Names.validateRecordName("with space and ~!@#$%^&*()"))
        for bad in ["", "_x", String(repeating: "x", count: 256), "a\u{0}", "a\u{7F}", "tab\t", "é"] {
            XCTAssertThrowsError(try Names.validateRecordName(bad), bad.debugDescription)
        }
        XCTAssertNoThrow(try Names.validateZoneName("_defaultZone"))
        XCTAssertThrowsError(try Names.validateZoneName("_other"))
        XCTAssertNoThrow(try Names.validateIdentifier("Game_2", what: "recordType"))
        for bad in ["", "2Game", "_Game", "Ga me", "Gäme", "a-b"] {
            XCTAssertThrowsError(try Names.validateIdentifier(bad, what: "recordType"), bad)
        }
    }

    func testARecordRoundTripsThroughItsWireForm() throws {
        var record = Record(recordName: "Match|~|M", recordType: "Match", fields: [
            "game": .reference(Reference(recordName: "Game|~|G", action: .deleteSelf)),
            "notes": .string("best of three"),
            "startDate": .timestamp(milliseconds: 1_763_800_000_000),
            "seats": .int64List([1, 2]),
            "photo": .bytes([0xDE, 0xAD]),
            "where": .location(Location(latitude: 1, longitude: 2)),
            "ratio": .double(0.25),
        ], recordChangeTag: "1-a", parent: "Game|~|G", zoneID: ZoneID(zoneName: "ScorebookData", ownerRecordName: "_owner"))
        record.created = ChangeStamp(timestamp: 1, userRecordName: "_owner", deviceID: "d1")
        record.modified = ChangeStamp(timestamp: 2, userRecordName: "_owner")

        let wire = record.json()
        XCTAssertEqual(wire["fields"]?["notes"], ["value": "best of three", "type": "STRING"], "responses always carry type")
        XCTAssertEqual(wire["parent"], ["recordName": "Game|~|G"])
        let text = wire.serialized()
        let decoded = try Record(responseJSON: try JSONValue.parse(text))
        XCTAssertEqual(decoded, record)

        let partial = record.json(desiredKeys: ["notes", "absent"])
        XCTAssertEqual(partial["fields"]?.objectValue?.keys.sorted(), ["notes"])
        XCTAssertEqual(try Record.fields(fromStoredJSON: record.fieldsJSONBytes()), record.fields)
    }

    func testReadingARequestRecord() throws {
        let json: JSONValue = [
            "recordName": "g1", "recordType": "Game",
            "fields": ["name": ["value": "Catan"], "gone": ["value": nil], "alsoGone": nil, "n": ["value": 2]],
            "parent": nil, "zoneID": nil, "unknownKey": ["ignored": true],
        ]
        let record = try Record(requestJSON: json) { type, field in type == "Game" && field == "n" ? .double : nil }
        XCTAssertEqual(record.fields, ["name": .string("Catan"), "n": .double(2)])
        XCTAssertEqual(record.removedFieldNames, ["gone", "alsoGone"], "a null value asks to remove the field")
        XCTAssertNil(record.parent)
        XCTAssertNil(record.zoneID)
        XCTAssertEqual(try Record(requestJSON: ["recordName": "g1"]) { _, _ in nil }.recordType, "", "recordType may be omitted")

        let bad: [JSONValue] = [
            "string", ["recordName": 5], ["recordName": "_x"], ["recordName": "g", "recordType": 5],
            ["recordName": "g", "recordType": "bad type"], ["recordName": "g", "fields": []], ["recordName": "g", "fields": ["9x": ["value": 1]]],
            ["recordName": "g", "recordChangeTag": 5], ["recordName": "g", "parent": "p"], ["recordName": "g", "parent": ["recordName": "_p"]],
            ["recordName": "g", "zoneID": "Z"], ["recordName": "g", "zoneID": ["zoneName": 1]],
        ]
        for json in bad {
            XCTAssertThrowsError(try Record(requestJSON: json) { _, _ in nil }, json.serializedString()) {
                XCTAssertEqual(($0 as? ServerError)?.code, .badRequest, "\($0)")
            }
        }
    }

    func testZoneIDsAndErrors() throws {
        XCTAssertEqual(try ZoneID.fromRequest(nil), .default)
        XCTAssertEqual(try ZoneID.fromRequest(.null), .default)
        XCTAssertEqual(try ZoneID.fromRequest(["zoneName": "Z", "ownerRecordName": "_o"]), ZoneID(zoneName: "Z", ownerRecordName: "_o"))
        XCTAssertThrowsError(try ZoneID.fromRequest(["zoneName": "_nope"]))

        var conflict = ServerError(.conflict, "changed").with(recordName: "g1")
        conflict.serverRecord = ["recordName": "g1", "recordChangeTag": "2"]
        let wire = conflict.json(uuid: "u-1")
        XCTAssertEqual(wire["serverErrorCode"], "CONFLICT")
        XCTAssertEqual(wire["uuid"], "u-1")
        XCTAssertEqual(ServerError(json: wire), conflict)
        XCTAssertNil(ServerError(json: ["records": []]))
        XCTAssertEqual(ServerError(json: ["serverErrorCode": "SOMETHING_NEW"])?.code, .internalError)

        let statuses = Dictionary(uniqueKeysWithValues: ServerErrorCode.allCases.map { ($0.rawValue, $0.httpStatus) })
        XCTAssertEqual(statuses, [
            "BAD_REQUEST": 400, "ATOMIC_ERROR": 400, "AUTHENTICATION_FAILED": 401, "ACCESS_DENIED": 403, "NOT_FOUND": 404,
            "ZONE_NOT_FOUND": 404, "CONFLICT": 409, "EXISTS": 409, "CHANGE_TOKEN_EXPIRED": 410, "VALIDATING_REFERENCE_ERROR": 412,
            "LIMIT_EXCEEDED": 413, "AUTHENTICATION_REQUIRED": 421, "THROTTLED": 429, "INTERNAL_ERROR": 500, "TRY_AGAIN_LATER": 503,
        ], "the error table")
    }
}
