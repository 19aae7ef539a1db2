import Foundation
import XCTest

@testable import RecordModel

/// The wire-format fixtures in Fixtures/ are what an existing CloudKit Web Services client sends
/// (pretty-printed, no `type` on field values, no `zoneID`); they must read as the contract says.
final class FixtureTests: XCTestCase {
    static let fixtures = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appendingPathComponent("Fixtures")

    func testACloudKitStyleModifyRequestReadsWithTypesFromTheSchema() throws {
        let data = try Data(contentsOf: Self.fixtures.appendingPathComponent("cloudkit-modify-request.json"))
        let request = try JSONValue.parse([UInt8](data))
        let operations = try XCTUnwrap(request["operations"]?.arrayValue)
        let schema = BuiltinSchema.scorebook
        let records = try operations.map { operation in
            try Record(requestJSON: XCTUnwrap(operation["record"])) { schema.fieldType(recordType: $0, field: $1) }
        }
        XCTAssertEqual(records.map(\.recordType), ["Game", "Match"])
        XCTAssertEqual(records[0].fields["lowScoreWins"]?.type, .int64)
        XCTAssertEqual(records[0].fields["modificationDate"]?.type, .timestamp, "the schema, not the JSON, decides")
        XCTAssertEqual(records[1].fields["game"]?.referenceValue,
                       Reference(recordName: "Game|~|9B1DEB4D-3B7D-4BAD-9BDD-2B0D7B3DCB6D", action: .deleteSelf))
        XCTAssertNil(request["zoneID"], "no zoneID: the request addresses _defaultZone")
        XCTAssertEqual(try ZoneID.fromRequest(request["zoneID"]), .default)
    }
}
