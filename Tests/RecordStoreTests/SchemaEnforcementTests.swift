import RecordModel
import RecordStore
import XCTest

/// `production` enforces the loaded schema; `development` learns types and fields on first save
/// and then holds them to their type (CONTRACT §3).
final class SchemaEnforcementTests: StoreTestCase {
    func testProductionAcceptsRecordsOfTheSchemaWithTypesTakenFromIt() throws {
        let saved = try save(prod, record("Game|~|1", "Game", ["name": field("Catan"), "lowScoreWins": field(1), "modificationDate": field(1_763_800_000_000)]))
        let stored = try saved.record().fields
        XCTAssertEqual(stored["name"], .string("Catan"))
        XCTAssertEqual(stored["lowScoreWins"], .int64(1))
        XCTAssertEqual(stored["modificationDate"]?.type, .timestamp, "an integer sent without type to a TIMESTAMP field is a TIMESTAMP")

        let score = try save(prod, record("Score|~|1", "Score", ["value": field(3), "round": field(2)]))
        XCTAssertEqual(try score.record().fields["value"], .double(3), "an integer sent to a DOUBLE field is a DOUBLE")
    }

    func testProductionRefusesAnUnknownTypeNamingIt() throws {
        let error = try modify(prod, [(.create, record("x", "Spaceship", ["name": field("Enterprise", "STRING")]))]).first?.error
        XCTAssertEqual(error?.code, .badRequest)
        XCTAssertTrue(error?.reason.contains("Spaceship") ?? false, error?.reason ?? "")
    }

    func testProductionRefusesAnUnknownFieldNamingIt() throws {
        let error = try modify(prod, [(.create, record("Game|~|1", "Game", ["colour": field("red", "STRING")]))]).first?.error
        XCTAssertEqual(error?.code, .badRequest)
        XCTAssertTrue(error?.reason.contains("colour") ?? false, error?.reason ?? "")
        XCTAssertNil(try lookup(prod, "Game|~|1"))
    }

    func testProductionRefusesAWrongTypeNamingTheField() throws {
        for (fieldName, value) in [("name", field(5, "INT64")), ("lowScoreWins", field("yes", "STRING")), ("name", field(["no"]))] {
            let error = try modify(prod, [(.create, record("Game|~|1", "Game", [fieldName: value]))]).first?.error
            XCTAssertEqual(error?.code, .badRequest, "\(fieldName) = \(value.serializedString())")
            XCTAssertTrue(error?.reason.contains(fieldName) ?? false, error?.reason ?? "")
        }
        let untyped = try modify(prod, [(.create, record("Game|~|1", "Game", ["name": field(5)]))]).first?.error
        XCTAssertEqual(untyped?.code, .badRequest, "an untyped value that does not fit the schema's type")
        XCTAssertTrue(untyped?.reason.contains("name") ?? false, untyped?.reason ?? "")
    }

    func testDevelopmentLearnsNewTypesAndFieldsThenEnforcesTheirTypes() throws {
        try save(dev, record("s1", "Spaceship", ["crew": field(430, "INT64"), "launched": field(1_000, "TIMESTAMP")]))
        try save(dev, .forceUpdate, record("s1", "Spaceship", ["captain": field("Kirk", "STRING")]))
        XCTAssertEqual(try fields(of: try lookup(dev, "s1"))["captain"], .string("Kirk"), "a new field on a known type")

        let error = try modify(dev, [(.create, record("s2", "Spaceship", ["crew": field("many", "STRING")]))]).first?.error
        XCTAssertEqual(error?.code, .badRequest, "a learned field keeps its type")
        XCTAssertTrue(error?.reason.contains("crew") ?? false, error?.reason ?? "")

        // Without `type`, the learned schema decides: 2000 is a TIMESTAMP here, not an INT64.
        let s3 = try save(dev, record("s3", "Spaceship", ["launched": field(2_000)]))
        XCTAssertEqual(try s3.record().fields["launched"]?.type, .timestamp)

        // The same field name on another type is independent.
        XCTAssertNotNil(try modify(dev, [(.create, record("b1", "Boat", ["crew": field("few", "STRING")]))]).first?.savedRecord)
    }

    func testTheLearnedDevelopmentSchemaSurvivesReopeningTheStore() throws {
        try save(dev, record("s1", "Spaceship", ["crew": field(430, "INT64")]))
        try reopenStore()
        let error = try modify(dev, [(.create, record("s2", "Spaceship", ["crew": field("many", "STRING")]))]).first?.error
        XCTAssertEqual(error?.code, .badRequest, "the type learned before the restart still holds")
    }

    func testEnvironmentsAreSeparateDatabases() throws {
        try save(dev, record("Game|~|1", "Game", ["name": field("Dev")]))
        XCTAssertNil(try lookup(prod, "Game|~|1"))
        let other = try scope(alice, .development, container: "iCloud.other")
        XCTAssertNil(try lookup(other, "Game|~|1"), "containers are separate namespaces")
    }
}
