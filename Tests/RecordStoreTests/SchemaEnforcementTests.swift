import Foundation
import RecordModel
import RecordStore
import XCTest

/// `production` enforces the loaded schema; `development` learns types and fields on first save
/// and then holds them to their type.
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

    /// Within one batch, a field a record adds is known to the records after it — and one added
    /// by a record that was then refused is not (the field types looked up are kept per batch).
    func testFieldsLearnedInABatchHoldForTheRestOfItAndRefusedRecordsTeachNothing() throws {
        let big = String(repeating: "x", count: 1_000_001)
        let results = try modify(dev, atomic: false, [
            (.create, record("k0", "Kite", ["span": field(3, "INT64"), "story": field(.string(big), "STRING")])),
            (.create, record("k1", "Kite", ["span": field("wide", "STRING")])),
            (.create, record("k2", "Kite", ["span": field(4, "INT64")])),
            (.create, record("k3", "Kite", ["span": field("narrow")])),
            (.create, record("k4", "Kite", ["tail": field(2.5, "DOUBLE")])),
            (.create, record("k5", "Kite", ["tail": field("long", "STRING"), "span": field("any", "STRING")])),
        ])
        XCTAssertEqual(results.map { $0.error?.code }, [.limitExceeded, nil, .badRequest, nil, nil, .badRequest])
        XCTAssertEqual(try fields(of: try lookup(dev, "k3"))["span"], .string("narrow"), "typed by the field k1 added")
        XCTAssertTrue(results[5].error?.reason.contains("tail") ?? false, results[5].error?.reason ?? "")
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

    /// Requests racing to be the first to save a new field with different types (development):
    /// the schema learns one type, so exactly one succeeds and records of the type never hold the
    /// field with several types (a regression test: each request once validated against the schema
    /// it had read before taking the writer, and all of them succeeded).
    func testConcurrentFirstSavesOfANewFieldAgreeOnOneType() throws {
        var roundsWithoutOneWinner: [Int] = []
        var roundsWithMixedTypes: [Int] = []
        for round in 0..<8 {
            let type = "Race\(round)"
            let results = LockedArray<RecordOperationResult>()
            let start = DispatchSemaphore(value: 0)
            let group = DispatchGroup()
            for (index, wire) in ["STRING", "INT64", "DOUBLE"].enumerated() {
                group.enter()
                Thread.detachNewThread { [store, dev] in
                    defer { group.leave() }
                    start.wait()
                    let value: JSONValue = wire == "STRING" ? "text" : wire == "INT64" ? 1 : 1.5
                    let record: JSONValue = ["recordName": .string("r\(round)-\(index)"), "recordType": .string(type),
                                             "fields": ["f": ["value": value, "type": .string(wire)]]]
                    if let result = try? store!.modifyRecords(dev!, zone: .default, operations: [RecordOperation(type: .create, record: record)],
                                                              atomic: true, deviceID: nil).first {
                        results.append(result)
                    }
                }
            }
            for _ in 0..<3 { start.signal() }
            XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
            XCTAssertEqual(results.values.count, 3, "every request was answered")
            if results.values.filter({ $0.savedRecord != nil }).count != 1 { roundsWithoutOneWinner.append(round) }
            let stored = try store.queryRecords(dev, zone: .default, query: try RecordQuery(json: ["recordType": .string(type)]),
                                                resultsLimit: 10, continuationMarker: nil).records
            if Set(try stored.compactMap { try $0.record().fields["f"]?.type }).count > 1 { roundsWithMixedTypes.append(round) }
        }
        XCTAssertEqual(roundsWithoutOneWinner, [], "rounds in which not exactly one first type was accepted")
        XCTAssertEqual(roundsWithMixedTypes, [], "rounds after which one record type holds field f with several types")
    }
}
