import Foundation
import RecordModel
import RecordStore
import Synchronization
import XCTest
import TestSupport

/// The seven operation types of `records/modify` and their errors.
final class RecordOperationTests: StoreTestCase {
    func testAChangeTagIsTheZoneAndSequenceInBase36() {
        for (zone, sequence) in [(Int64(1), Int64(0)), (2, 1), (35, 36), (1_296, 46_655), (7, Int64.max)] {
            XCTAssertEqual(RecordRules.changeTag(zoneRowID: zone, sequence: sequence),
                           String(zone, radix: 36) + "-" + String(sequence, radix: 36))
        }
    }

    func testCreateStoresTheRecordWithATagAndStampsAndRefusesATakenName() throws {
        let saved = try save(dev, record("g1", "Game", ["name": field("Catan", "STRING"), "rounds": field(3, "INT64")]))
        XCTAssertEqual(saved.recordType, "Game")
        XCTAssertFalse(saved.changeTag.isEmpty)
        XCTAssertEqual(saved.created.userRecordName, alice.recordName)
        XCTAssertEqual(saved.modified.deviceID, "test-device")
        XCTAssertEqual(saved.zoneID.zoneName, ZoneID.defaultZoneName)

        let found = try XCTUnwrap(try lookup(dev, "g1"))
        XCTAssertEqual(found.changeTag, saved.changeTag)
        XCTAssertEqual(try fields(of: found)["name"], .string("Catan"))
        XCTAssertEqual(try fields(of: found)["rounds"], .int64(3))

        let again = try modify(dev, [(.create, record("g1", "Game", ["name": field("Other", "STRING")]))])
        assertError(again.first, .exists)
        XCTAssertEqual(try fields(of: try lookup(dev, "g1"))["name"], .string("Catan"), "a refused create changes nothing")
    }

    /// A create is written as an insert that yields to a taken name (SQLite reads no record first):
    /// every way a name can be taken must still answer as when the record was read before.
    func testACreateMeetsATakenNameATombstoneAndABadBodyAsBefore() throws {
        let gone = try save(dev, record("gone", "Game", ["name": field("old", "STRING")]))
        try modify(dev, [(.forceDelete, record("gone"))])
        try save(dev, record("taken", "Game", ["name": field("Catan", "STRING")]))
        try save(dev, record("other", "Game", ["name": field("Azul", "STRING")]))

        let results = try modify(dev, atomic: false, [
            (.create, record("new", "Game", ["name": field("first", "STRING")])),
            (.create, record("taken", "Game", ["name": field(["not", "a string"], "STRING")])),
            (.create, record("gone", "Game", ["name": field("again", "STRING")])),
            (.create, record("other", "Player", ["name": field("Other", "STRING")])),
        ])
        guard case .saved(let first) = results[0], case .saved(let again) = results[2] else {
            return XCTFail("expected the new name and the tombstone's name saved, got \(results)")
        }
        assertError(results[1], .exists, "a taken name is answered before the body's own fault")
        assertError(results[3], .exists, "a taken name of another type")
        XCTAssertEqual(try fields(of: try lookup(dev, "new"))["name"], .string("first"))
        XCTAssertEqual(try fields(of: try lookup(dev, "taken"))["name"], .string("Catan"))
        XCTAssertEqual(try fields(of: try lookup(dev, "other"))["name"], .string("Azul"))
        XCTAssertEqual(try fields(of: try lookup(dev, "gone"))["name"], .string("again"), "a tombstone's name can be created again")
        XCTAssertNotEqual(again.changeTag, gone.changeTag)
        XCTAssertEqual(again.created.timestamp, again.modified.timestamp, "created anew, not carried from the deleted record")
        // A refused create takes no sequence: the two saves are consecutive changes.
        let sequences = [first, again].map { Int($0.changeTag.split(separator: "-")[1], radix: 36) }
        XCTAssertEqual(sequences[1].map { $0 - 1 }, sequences[0])

        let again2 = try modify(dev, [(.create, record("new", "Game", ["name": field("second", "STRING")]))])
        assertError(again2.first, .exists, "a name created by the batch before")
        let feed = try fetchChanges(dev)
        XCTAssertEqual(feed.state["gone"]??.changeTag, again.changeTag)
        XCTAssertEqual(feed.state["new"]??.changeTag, first.changeTag)
    }

    func testUpdateChangesOnlyTheGivenFieldsAndEveryWriteChangesTheTag() throws {
        let v1 = try save(dev, record("g1", "Game", ["name": field("Catan", "STRING"), "rounds": field(3, "INT64")]))
        let v2 = try save(dev, .update, record("g1", "Game", ["rounds": field(4, "INT64")], tag: v1.changeTag))
        XCTAssertNotEqual(v2.changeTag, v1.changeTag)
        let stored = try fields(of: try lookup(dev, "g1"))
        XCTAssertEqual(stored["name"], .string("Catan"), "update keeps fields it does not name")
        XCTAssertEqual(stored["rounds"], .int64(4))
        XCTAssertEqual(try lookup(dev, "g1")?.created.timestamp, v1.created.timestamp, "created stays")

        // A null value removes a field; recordType may be left out of an update.
        let v3 = try save(dev, .update, record("g1", nil, ["rounds": ["value": nil]], tag: v2.changeTag))
        XCTAssertEqual(v3.recordType, "Game")
        XCTAssertNil(try fields(of: try lookup(dev, "g1"))["rounds"])
    }

    func testReplaceRemovesOmittedFields() throws {
        let v1 = try save(dev, record("g1", "Game", ["name": field("Catan", "STRING"), "rounds": field(3, "INT64")]))
        try save(dev, .replace, record("g1", "Game", ["rounds": field(5, "INT64")], tag: v1.changeTag))
        XCTAssertEqual(try fields(of: try lookup(dev, "g1")), ["rounds": .int64(5)])
    }

    func testStaleOrMissingTagIsConflictCarryingTheServerRecord() throws {
        let v1 = try save(dev, record("g1", "Game", ["name": field("Catan", "STRING")]))
        let v2 = try save(dev, .update, record("g1", "Game", ["name": field("Catan 2", "STRING")], tag: v1.changeTag))

        for type in [RecordOperationType.update, .replace, .delete] {
            for tag in [v1.changeTag, nil] {
                let result = try modify(dev, [(type, record("g1", "Game", ["name": field("lost", "STRING")], tag: tag))]).first
                assertError(result, .conflict, "\(type) with tag \(tag ?? "none")")
                // Parse the wire form: in process the stored fields are spliced in as raw JSON.
                let server = try JSONValue.parse(try XCTUnwrap(result?.error?.serverRecord, "CONFLICT carries serverRecord").serialized())
                XCTAssertEqual(server["recordChangeTag"]?.stringValue, v2.changeTag)
                XCTAssertEqual(server["fields"]?["name"]?["value"], "Catan 2")
                XCTAssertEqual(result?.error?.recordName, "g1")
            }
        }
        let current = try XCTUnwrap(try lookup(dev, "g1"))
        XCTAssertEqual(current.changeTag, v2.changeTag, "no conflicting write got through")
    }

    func testConcurrentWritersHoldingTheSameTagLetExactlyOneWin() throws {
        let v1 = try save(dev, record("contested", "Game", ["n": field(0, "INT64")]))
        let writers = 8
        let results = LockedArray<RecordOperationResult>()
        let group = DispatchGroup()
        for index in 0..<writers {
            group.enter()
            Thread.detachNewThread { [store, dev] in
                defer { group.leave() }
                let type: RecordOperationType = index % 2 == 0 ? .update : .replace
                let record: JSONValue = ["recordName": "contested", "recordType": "Game", "recordChangeTag": .string(v1.changeTag),
                                         "fields": ["n": ["value": .int(Int64(index + 1)), "type": "INT64"]]]
                if let result = try? store!.modifyRecords(dev!, zone: .default, operations: [RecordOperation(type: type, record: record)],
                                                          atomic: true, deviceID: "writer-\(index)").first {
                    results.append(result)
                }
            }
        }
        XCTAssertEqual(group.wait(timeout: .now() + 30), .success)
        let all = results.values
        XCTAssertEqual(all.count, writers)
        let winners = all.compactMap(\.savedRecord)
        XCTAssertEqual(winners.count, 1, "exactly one write with the shared tag succeeds")
        XCTAssertEqual(all.compactMap(\.error).map(\.code), Array(repeating: .conflict, count: writers - 1))
        XCTAssertEqual(try lookup(dev, "contested")?.changeTag, winners.first?.changeTag)
    }

    func testUpdateReplaceAndDeleteOfAMissingRecordAreNotFound() throws {
        for type in [RecordOperationType.update, .replace, .delete] {
            let result = try modify(dev, [(type, record("nope", "Game", [:], tag: "1-1"))]).first
            assertError(result, .notFound, "\(type)")
        }
        XCTAssertNil(try lookup(dev, "nope"))
    }

    func testForceUpdateAndForceReplaceIgnoreTheTagAndCreateMissingRecords() throws {
        let created = try save(dev, .forceUpdate, record("g1", "Game", ["name": field("Catan", "STRING")]))
        XCTAssertNotNil(try lookup(dev, "g1"), "forceUpdate creates")
        try save(dev, .forceUpdate, record("g1", "Game", ["rounds": field(2, "INT64")], tag: "stale"))
        XCTAssertEqual(try fields(of: try lookup(dev, "g1")), ["name": .string("Catan"), "rounds": .int64(2)])

        try save(dev, .forceReplace, record("g2", "Game", ["name": field("Go", "STRING")]))
        XCTAssertNotNil(try lookup(dev, "g2"), "forceReplace creates")
        try save(dev, .forceReplace, record("g1", "Game", ["rounds": field(9, "INT64")], tag: created.changeTag))
        XCTAssertEqual(try fields(of: try lookup(dev, "g1")), ["rounds": .int64(9)], "forceReplace drops omitted fields")
    }

    func testDeleteWithTheCurrentTagAndForceDeleteOfAMissingRecordSucceed() throws {
        let v1 = try save(dev, record("g1", "Game", ["name": field("Catan", "STRING")]))
        let deleted = try modify(dev, [(.delete, record("g1", "Game", tag: v1.changeTag))])
        XCTAssertTrue(deleted.first?.isDeleted ?? false)
        XCTAssertNil(try lookup(dev, "g1"))

        let forced = try modify(dev, [(.forceDelete, record("never-existed", "Game"))])
        XCTAssertTrue(forced.first?.isDeleted ?? false, "forceDelete of a missing record succeeds")

        try save(dev, record("g2", "Game"))
        XCTAssertTrue(try modify(dev, [(.forceDelete, record("g2", nil, tag: "stale"))]).first?.isDeleted ?? false)
        XCTAssertNil(try lookup(dev, "g2"))
    }

    func testADeletedNameCanBeCreatedAgain() throws {
        try save(dev, record("g1", "Game", ["name": field("Catan", "STRING")]))
        try modify(dev, [(.forceDelete, record("g1"))])
        let again = try save(dev, record("g1", "Game", ["name": field("Second", "STRING")]))
        XCTAssertEqual(try fields(of: try lookup(dev, "g1"))["name"], .string("Second"))
        XCTAssertFalse(again.changeTag.isEmpty)
    }

    func testChangingTheRecordTypeIsBadRequest() throws {
        let v1 = try save(dev, record("g1", "Game", ["name": field("Catan", "STRING")]))
        for (type, tag) in [(RecordOperationType.update, v1.changeTag), (.forceUpdate, nil), (.replace, v1.changeTag), (.forceReplace, nil)] {
            let result = try modify(dev, [(type, record("g1", "Match", ["name": field("x", "STRING")], tag: tag))]).first
            assertError(result, .badRequest, "\(type) to another type")
        }
        XCTAssertEqual(try lookup(dev, "g1")?.recordType, "Game")
        XCTAssertEqual(try lookup(dev, "g1")?.changeTag, v1.changeTag)
    }

    func testInvalidNamesAndMalformedFieldsAreBadRequest() throws {
        let invalidNames = ["", "_private", String(repeating: "a", count: 256), "tab\there", "newline\n", "caf\u{E9}"]
        for name in invalidNames {
            let results = try modify(dev, [(.create, record(name, "Game"))])
            assertError(results.first, .badRequest, "name \(name.debugDescription)")
        }
        XCTAssertNotNil(try modify(dev, [(.create, record(String(repeating: "a", count: 255), "Game"))]).first?.savedRecord,
                        "255 characters is allowed")

        let malformed: [(String, JSONValue)] = [
            ("wrong value type", field("not a number", "INT64")),
            ("unknown type", field(1, "INTEGER")),
            ("no value", ["type": "STRING"]),
            ("reference without name", field(["action": "NONE"], "REFERENCE")),
            ("bad action", field(["recordName": "x", "action": "EXPLODE"], "REFERENCE")),
            ("bad base64", field("%%%", "BYTES")),
            ("latitude out of range", field(["latitude": 91, "longitude": 0], "LOCATION")),
            ("list of wrong element", field([1, "two"], "INT64_LIST")),
            ("empty list without type", field([])),
        ]
        for (what, value) in malformed {
            let results = try modify(dev, [(.create, record("r-\(what.count)", "Thing", ["f": value]))])
            assertError(results.first, .badRequest, what)
        }
        assertError(try modify(dev, [(.create, record("t1", nil))]).first, .badRequest, "create without recordType")
        assertError(try modify(dev, [(.create, record("t2", "9Lives"))]).first, .badRequest, "recordType must start with a letter")
    }

    func testEveryFieldTypeRoundTripsThroughTheStore() throws {
        let fieldsIn: [String: JSONValue] = [
            "s": field("text ✓ \"quoted\"", "STRING"),
            "i": field(-9_223_372_036_854_775_807, "INT64"),
            "d": field(2.5, "DOUBLE"),
            "t": field(1_763_800_000_123, "TIMESTAMP"),
            "b": field("AAEC/w==", "BYTES"),
            "l": field(["latitude": 47.6, "longitude": -122.3, "altitude": 10.0], "LOCATION"),
            "sl": field(["a", "b"], "STRING_LIST"),
            "il": field([1, 2, 3], "INT64_LIST"),
            "dl": field([1.5], "DOUBLE_LIST"),
            "tl": field([1, 2], "TIMESTAMP_LIST"),
        ]
        try save(dev, record("all", "Everything", fieldsIn))
        let stored = try fields(of: try lookup(dev, "all"))
        XCTAssertEqual(stored["s"], .string("text ✓ \"quoted\""))
        XCTAssertEqual(stored["i"], .int64(-9_223_372_036_854_775_807))
        XCTAssertEqual(stored["d"], .double(2.5))
        XCTAssertEqual(stored["t"], .timestamp(milliseconds: 1_763_800_000_123))
        XCTAssertEqual(stored["b"]?.bytesValue, [0, 1, 2, 255])
        XCTAssertEqual(stored["l"]?.locationValue?.latitude, 47.6)
        XCTAssertEqual(stored["l"]?.locationValue?.extra["altitude"], .double(10))
        XCTAssertEqual(stored["sl"], .stringList(["a", "b"]))
        XCTAssertEqual(stored["il"], .int64List([1, 2, 3]))
        XCTAssertEqual(stored["dl"]?.type, .list(.double))
        XCTAssertEqual(stored["tl"]?.type, .list(.timestamp))
    }

    /// Every answer's record dictionary is valid JSON that reads back to what was saved, for any
    /// valid name and any string: quotes, backslashes, control characters, U+2028, emoji.
    func testRecordDictionariesAreValidJSONForAnyNameAndString() throws {
        var generator = SplitMix64(seed: 99)
        let printable = (0x20...0x7E).map { Character(Unicode.Scalar(UInt8($0))) }
        let extra: [Character] = ["\u{0}", "\u{1}", "\n", "\t", "\u{1F}", "\u{7F}", "é", "\u{2028}", "🎲", "\"", "\\"]
        var names: [String] = []
        var operations: [(RecordOperationType, JSONValue)] = []
        for index in 0..<60 {
            var name = String((0..<(1 + Int(generator.next() % 20))).map { _ in printable[Int(generator.next() % UInt64(printable.count))] })
            if name.hasPrefix("_") { name = "x" + name }
            name = String("\(index)\(name)".prefix(255))
            let text = String((0..<Int(generator.next() % 30)).map { _ in
                generator.next() % 3 == 0 ? extra[Int(generator.next() % UInt64(extra.count))] : printable[Int(generator.next() % UInt64(printable.count))]
            })
            names.append(name)
            operations.append((.create, record(name, "Thing", ["text": field(.string(text), "STRING"), "list": field([.string(text), "b"], "STRING_LIST")],
                                               parent: index > 0 ? names[index - 1] : nil)))
        }
        let results = try store.modifyRecords(dev, zone: .default, operations: operations.map { RecordOperation(type: $0.0, record: $0.1) },
                                              atomic: true, deviceID: "device \"quoted\" \\ \u{1}")
        var answers: [StoredRecord] = results.compactMap(\.savedRecord)
        XCTAssertEqual(answers.count, 60, "\(results.compactMap(\.error).first.map(\.description) ?? "")")
        answers += try store.lookupRecords(dev, zone: .default, recordNames: names).compactMap { try? $0.get() }
        answers += try fetchChanges(dev).state.values.compactMap { $0 }
        answers += try store.queryRecords(dev, zone: .default, query: try RecordQuery(json: ["recordType": "Thing"]), resultsLimit: 200,
                                          continuationMarker: nil).records
        XCTAssertEqual(answers.count, 240)
        let sent = Dictionary(uniqueKeysWithValues: operations.map { ($0.1["recordName"]!.stringValue!, $0.1) })
        for stored in answers {
            let wire = try JSONValue.parse(stored.json().serialized())
            let name = try XCTUnwrap(wire["recordName"]?.stringValue)
            XCTAssertEqual(name, stored.recordName)
            XCTAssertEqual(wire["fields"]?["text"]?["value"], sent[name]?["fields"]?["text"]?["value"], name.debugDescription)
            XCTAssertEqual(wire["fields"]?["list"]?["type"], "STRING_LIST")
            XCTAssertEqual(wire["parent"]?["recordName"], sent[name]?["parent"]?["recordName"])
            XCTAssertEqual(wire["modified"]?["deviceID"], "device \"quoted\" \\ \u{1}")
            XCTAssertEqual(try Record(responseJSON: wire).fields, try stored.record().fields)
        }
    }

    func testARecordOverOneMegabyteIsLimitExceeded() throws {
        let big = String(repeating: "x", count: 1_000_001)
        assertError(try modify(dev, [(.create, record("big", "Blob", ["text": field(.string(big), "STRING")]))]).first, .limitExceeded)
        XCTAssertNil(try lookup(dev, "big"))
    }

    func testMoreThan400OperationsOrTheSameNameTwiceRefusesTheWholeRequest() throws {
        let many = (0..<401).map { (RecordOperationType.create, record("r\($0)", "Thing")) }
        assertThrows(.limitExceeded) { try modify(dev, many) }
        assertThrows(.badRequest) { try modify(dev, [(.create, record("dup", "Thing")), (.forceUpdate, record("dup", "Thing"))]) }
        XCTAssertNil(try lookup(dev, "r0"))
        XCTAssertNil(try lookup(dev, "dup"))
        XCTAssertEqual(try modify(dev, (0..<400).map { (.create, record("r\($0)", "Thing")) }).count, 400, "400 is allowed")
    }

    /// `validateBatch` finds a repeated name with its own hash table, not a `Set<String>`: names
    /// differing in one byte anywhere, of every length around its eight-byte steps, non-ASCII and
    /// small (inline) strings are told apart, and a repeat is found wherever it sits.
    func testARepeatedNameIsFoundWhereverItSitsAndNearNamesAreNot() throws {
        var names: [String] = []
        for length in 1...40 {
            let base = String(repeating: "a", count: length)
            names.append(base)
            for position in stride(from: 0, to: length, by: 3) {
                var bytes = Array(base.utf8)
                bytes[position] = UInt8(ascii: "b")
                names.append(String(decoding: bytes, as: UTF8.self))
            }
        }
        names += ["Spiel|~|é", "Spiel|~|è", "Game|~|00000000-0000-0000-0000-000000000001", "Game|~|00000000-0000-0000-0000-000000000002"]
        names += (0..<80).map { "Player|~|\($0)" }
        XCTAssertGreaterThan(names.count, 400)
        XCTAssertEqual(Set(names).count, names.count)
        let operations = names.prefix(400).map { RecordOperation(type: .create, record: record($0, "Thing")) }
        XCTAssertNoThrow(try RecordRules.validateBatch(operations))
        for (first, second) in [(0, 1), (0, 399), (398, 399), (17, 250), (123, 124)] {
            var repeated = operations
            repeated[second] = RecordOperation(type: .forceUpdate, record: record(names[first], "Thing"))
            XCTAssertThrowsError(try RecordRules.validateBatch(repeated), "\(first), \(second)") { error in
                XCTAssertEqual((error as? ServerError)?.code, .badRequest)
                XCTAssertTrue((error as? ServerError)?.reason.contains("'\(names[first])'") ?? false, "\(error)")
            }
        }
    }

    func testAMissingZoneIsZoneNotFoundForEveryRecordOperation() throws {
        let zone = ZoneID(zoneName: "Nowhere")
        assertThrows(.zoneNotFound) { try modify(dev, zone: zone, [(.create, record("g1", "Game"))]) }
        assertThrows(.zoneNotFound) { try store.lookupRecords(dev, zone: zone, recordNames: ["g1"]) }
        assertThrows(.zoneNotFound) { try store.zoneChanges(dev, zone: zone, syncToken: nil, resultsLimit: 10, recordTypes: nil) }
        let query = try RecordQuery(json: ["recordType": "Game"])
        assertThrows(.zoneNotFound) { try store.queryRecords(dev, zone: zone, query: query, resultsLimit: 10, continuationMarker: nil) }
    }
}

/// An array appended to from several threads.
final class LockedArray<Element: Sendable>: Sendable {
    private let elements = Mutex<[Element]>([])

    func append(_ element: Element) { elements.withLock { $0.append(element) } }

    var values: [Element] { elements.withLock { $0 } }
}
