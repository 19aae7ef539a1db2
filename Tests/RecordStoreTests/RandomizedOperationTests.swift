import Foundation
import RecordModel
import RecordStore
import XCTest
import TestSupport

/// A model-based test: random batches of all seven operation types, with current, stale and
/// missing tags, atomic or not, are applied to the store and to a tiny in-memory model of
/// `records/modify`. Every result, the stored state and the change feed must match the model.
/// The generator has a fixed seed, so a failure names a reproducible batch.
final class RandomizedOperationTests: StoreTestCase {
    struct ModelRecord: Equatable {
        var type: String
        var fields: [String: Int64]
        var tag: String
    }

    enum Expected: Equatable {
        case saved([String: Int64])
        case deleted
        case failed(ServerErrorCode)

        var kind: String {
            switch self {
            case .saved: return "saved"
            case .deleted: return "deleted"
            case .failed(let code): return code.rawValue
            }
        }
    }

    func testRandomBatchesMatchTheModel() throws {
        var generator = SplitMix64(seed: 2024)
        var model: [String: ModelRecord] = [:]
        var everyTag = Set<String>()
        var oldTags: [String] = ["stale-0"]
        let names = (0..<6).map { "n\($0)" }
        let midpoint = 150
        var midToken: String?
        var modelAtMidpoint: [String: ModelRecord] = [:]
        var outcomes: [String: Int] = [:]

        for batchIndex in 0..<300 {
            if batchIndex == midpoint {
                midToken = try fetchChanges(dev).token
                modelAtMidpoint = model
            }
            var batchNames = names
            batchNames.shuffle(using: &generator)
            let count = 1 + Int(generator.next() % 3)
            let atomic = generator.next() % 2 == 0
            var operations: [(RecordOperationType, JSONValue)] = []
            for name in batchNames.prefix(count) {
                let type = RecordOperationType.allCases[Int(generator.next() % 7)]
                var members: [String: JSONValue] = ["recordName": .string(name)]
                let current = model[name]
                // The type: usually the current one; sometimes another, but only where no tag is judged first.
                let changeType = generator.next() % 8 == 0 && !type.isTagChecked
                members["recordType"] = .string(changeType ? (current?.type == "Thing" ? "Other" : "Thing") : (current?.type ?? "Thing"))
                switch generator.next() % 3 {
                case 0: if let tag = current?.tag { members["recordChangeTag"] = .string(tag) }
                case 1: members["recordChangeTag"] = .string(oldTags[Int(generator.next() % UInt64(oldTags.count))])
                default: break
                }
                var fields: [String: JSONValue] = [:]
                for field in ["a", "b", "c"] where generator.next() % 2 == 0 {
                    fields[field] = generator.next() % 4 == 0 ? ["value": nil] : ["value": .int(Int64(generator.next() % 100)), "type": "INT64"]
                }
                members["fields"] = .object(fields)
                operations.append((type, .object(members)))
            }

            // What the model says.
            var next = model
            var expected: [Expected] = []
            for (type, json) in operations {
                expected.append(apply(type, json, to: &next))
            }
            let anyFailed = expected.contains { if case .failed = $0 { return true } else { return false } }
            if atomic && anyFailed {
                expected = expected.map { if case .failed = $0 { return $0 } else { return .failed(.atomicError) } }
                next = model
            }

            // What the store does.
            let results = try modify(dev, atomic: atomic, operations)
            let description = "batch \(batchIndex) atomic=\(atomic): \(operations.map { "\($0.0) \($0.1.serializedString())" })"
            XCTAssertEqual(results.count, expected.count, description)
            for (result, expectation) in zip(results, expected) {
                outcomes[expectation.kind, default: 0] += 1
                switch (result, expectation) {
                case (.saved(let record), .saved(let fields)):
                    XCTAssertEqual(try storedInts(record), fields, description)
                    XCTAssertTrue(everyTag.insert(record.changeTag).inserted, "tag \(record.changeTag) reused: \(description)")
                    next[record.recordName]?.tag = record.changeTag
                case (.deleted, .deleted):
                    break
                case (.failed(let error), .failed(let code)):
                    XCTAssertEqual(error.code, code, "\(error.reason) — \(description)")
                default:
                    XCTFail("got \(result), expected \(expectation) — \(description)")
                }
            }
            if (testRun?.totalFailureCount ?? 0) > 0 { return }  // stop at the first divergence
            for record in model.values { oldTags.append(record.tag) }
            model = next
        }

        // The generator exercised every kind of outcome, not just one.
        for kind in ["saved", "deleted", "CONFLICT", "NOT_FOUND", "EXISTS", "ATOMIC_ERROR", "BAD_REQUEST"] {
            XCTAssertGreaterThan(outcomes[kind] ?? 0, 5, "\(kind) in \(outcomes)")
        }

        // The stored state is the model's…
        for name in names {
            let stored = try lookup(dev, name)
            XCTAssertEqual(stored?.changeTag, model[name]?.tag, name)
            XCTAssertEqual(stored?.recordType, model[name]?.type, name)
            if let stored { XCTAssertEqual(try storedInts(stored), model[name]?.fields, name) }
        }
        // …and so is what the change feed tells a client, from the start and from the midpoint.
        let feed = try fetchChanges(dev, resultsLimit: 4).state
        for name in names { XCTAssertEqual(feed[name]??.changeTag, model[name]?.tag, "feed from the start: \(name)") }
        let sinceMid = try fetchChanges(dev, from: midToken, resultsLimit: 3).state
        for name in names where modelAtMidpoint[name] != model[name] {
            XCTAssertTrue(sinceMid.keys.contains(name), "\(name) changed after the midpoint, so it is in the feed since then")
            XCTAssertEqual(sinceMid[name]??.changeTag, model[name]?.tag, name)
        }
    }

    /// The rules of `records/modify`, applied to the model; returns what the operation must answer.
    func apply(_ type: RecordOperationType, _ json: JSONValue, to model: inout [String: ModelRecord]) -> Expected {
        let name = json["recordName"]!.stringValue!
        let recordType = json["recordType"]!.stringValue!
        let tag = json["recordChangeTag"]?.stringValue
        let fields = json["fields"]?.objectValue ?? [:]
        let given = fields.compactMapValues { $0["value"]?.int64Value }
        let removed = Set(fields.filter { $0.value["value"]?.isNull == true }.keys)
        let current = model[name]

        switch type {
        case .delete, .forceDelete:
            guard current != nil else { return type == .forceDelete ? .deleted : .failed(.notFound) }
            if type == .delete && tag != current!.tag { return .failed(.conflict) }
            model[name] = nil
            return .deleted
        case .create:
            if current != nil { return .failed(.exists) }
            model[name] = ModelRecord(type: recordType, fields: given, tag: "")
            return .saved(given)
        case .update, .replace, .forceUpdate, .forceReplace:
            guard let current else {
                if type == .update || type == .replace { return .failed(.notFound) }
                model[name] = ModelRecord(type: recordType, fields: given, tag: "")
                return .saved(given)
            }
            if (type == .update || type == .replace) && tag != current.tag { return .failed(.conflict) }
            if recordType != current.type { return .failed(.badRequest) }
            var newFields = given
            if type == .update || type == .forceUpdate {
                newFields = current.fields.merging(given) { _, new in new }
                for field in removed { newFields[field] = nil }
            }
            model[name] = ModelRecord(type: current.type, fields: newFields, tag: current.tag)
            return .saved(newFields)
        }
    }

    func storedInts(_ record: StoredRecord) throws -> [String: Int64] {
        try record.record().fields.compactMapValues(\.int64Value)
    }
}

extension RecordOperationType {
    /// The operations whose tag is checked before anything else about the record.
    var isTagChecked: Bool { self == .update || self == .replace || self == .delete }
}
