import Foundation
import XCTest

@testable import RecordModel

/// `records/modify` bodies read straight into drafts (`ModifyRequestBody`) must mean exactly what
/// the same bodies mean parsed into a tree first: the same records, the same refusals.
final class RecordDraftTests: XCTestCase {
    /// The body's records read both ways, as the dictionaries they stand for.
    func records(_ text: String, file: StaticString = #filePath, line: UInt = #line) throws -> [JSONValue] {
        let body = try XCTUnwrap(ModifyRequestBody.parse(Array(text.utf8)), file: file, line: line)
        let tree = try JSONValue.parse(text)
        let fromTree = (tree["operations"]?.arrayValue ?? []).map { RecordDraft(json: $0["record"] ?? .null).json }
        let straight = (body.operations ?? []).map { $0.record?.json ?? .null }
        XCTAssertEqual(straight, fromTree, file: file, line: line)
        return straight
    }

    func testARecordReadsAsItsParsedDictionary() throws {
        let text = #"""
            {"zoneID": {"zoneName": "Books"}, "atomic": false, "operations": [
              {"operationType": "create", "desiredKeys": ["name"], "ignored": [1, {"x": 2}],
               "record": {"recordName": "Game|~|1", "recordType": "Game", "recordChangeTag": "3-1",
                          "parent": {"recordName": "Book"}, "zoneID": {"zoneName": "Books"}, "participants": [{"email": "a@b"}],
                          "fields": {"name": {"value": "Go", "type": "STRING", "isEncrypted": false}, "plays": {"value": 3},
                                     "gone": null, "alsoGone": {"value": null},
                                     "when": {"type": "TIMESTAMP", "value": 1700000000000}}}},
              {"operationType": "forceDelete", "record": {"recordName": "Game|~|2"}}
            ]}
            """#
        let body = try XCTUnwrap(ModifyRequestBody.parse(Array(text.utf8)))
        XCTAssertEqual(body.members["zoneID"], ["zoneName": "Books"])
        XCTAssertEqual(body.members["atomic"], false)
        XCTAssertNil(body.members["operations"], "the operations are read into drafts, not kept as JSON")
        XCTAssertEqual(body.operations?.map(\.operationType), ["create", "forceDelete"])
        XCTAssertEqual(body.operations?.first?.desiredKeys, ["name"])
        let records = try records(text)
        XCTAssertEqual(records.first?["participants"], [["email": "a@b"]], "members a record is not made of are kept")

        let record = try Record(draft: XCTUnwrap(body.operations?.first?.record)) { _, field in field == "plays" ? .int64 : nil }
        XCTAssertEqual(record.recordName, "Game|~|1")
        XCTAssertEqual(record.recordChangeTag, "3-1")
        XCTAssertEqual(record.parent, "Book")
        XCTAssertEqual(record.fields["plays"]?.type, .int64, "an untyped field takes its declared type")
        XCTAssertEqual(record.fields["when"]?.type, .timestamp)
        XCTAssertEqual(record.removedFieldNames, ["gone", "alsoGone"])
    }

    func testARepeatedKeyKeepsItsLastValueAsInAParsedDictionary() throws {
        // A few fields (a linear check) and many (a set).
        let many = (0..<20).map { #""f\#($0)": {"value": \#($0)}"# }.joined(separator: ",")
        let text = #"""
            {"operations": [{"operationType": "update", "operationType": "create",
              "record": {"recordName": "A", "recordName": "B",
                         "fields": {"a": {"value": 1}, "b": {"value": 2}, "a": null, "b": {"value": 3, "value": 4}}}},
              {"operationType": "create", "record": {"recordName": "C", "fields": {\#(many), "f3": {"value": "last"}, "f19": null}}}]}
            """#
        let records = try records(text)
        XCTAssertEqual(records.first?["recordName"], "B")
        XCTAssertEqual(records.first?["fields"], ["a": .null, "b": ["value": 4]])
        let body = try XCTUnwrap(ModifyRequestBody.parse(Array(text.utf8)))
        XCTAssertEqual(body.operations?.first?.operationType, "create")
        let manyFields = try Record(draft: XCTUnwrap(body.operations?.last?.record)) { _, _ in nil }
        XCTAssertEqual(manyFields.fields.count, 19)
        XCTAssertEqual(manyFields.fields["f3"]?.value, "last")
        XCTAssertEqual(manyFields.removedFieldNames, ["f19"])
    }

    func testManyRepeatedFieldsKeepTheirLastValues() throws {
        // Each repeat replaces its field in place (found through an index among many fields), so
        // a body of many repeats reads in linear time; the values are the last ones sent.
        let count = 5_000
        let first = (0..<count).map { #""f\#($0)": {"value": 0}"# }
        let again = (0..<count).map { #""f\#($0)": {"value": \#($0)}"# }
        let text = #"{"operations": [{"operationType": "create", "record": {"recordName": "A", "fields": {\#((first + again).joined(separator: ","))}}}]}"#
        let body = try XCTUnwrap(ModifyRequestBody.parse(Array(text.utf8)))
        let record = try Record(draft: XCTUnwrap(body.operations?.first?.record)) { _, _ in nil }
        XCTAssertEqual(record.fields.count, count)
        XCTAssertEqual(record.fields["f4999"]?.value, 4_999)
        XCTAssertEqual(record.fields["f7"]?.value, 7)
        XCTAssertEqual(try records(text).first?["fields"]?.objectValue?.count, count)
    }

    func testShapesThatAreRefusedAreRefusedTheSameWay() throws {
        // Records and fields of the wrong shape read as drafts the checks refuse.
        let text = #"""
            {"operations": [{"operationType": "create", "record": 5}, {"operationType": "create", "record": {"recordName": "A", "fields": 7}},
                            {"operationType": "create", "record": {"recordName": "B", "fields": {"x": 7}}}, 9]}
            """#
        _ = try records(text)
        let body = try XCTUnwrap(ModifyRequestBody.parse(Array(text.utf8)))
        let drafts = try XCTUnwrap(body.operations)
        XCTAssertEqual(drafts.count, 4)
        XCTAssertEqual(drafts[0].record?.isObject, false)
        XCTAssertNil(drafts[3].operationType, "an operation that is not an object has no type")
        for (draft, message) in [(drafts[0], "must be an object"), (drafts[1], "fields must be an object")] {
            XCTAssertThrowsError(try Record(draft: XCTUnwrap(draft.record)) { _, _ in nil }) { error in
                XCTAssertTrue("\(error)".contains(message), "\(error)")
            }
        }
        XCTAssertThrowsError(try Record(draft: XCTUnwrap(drafts[2].record)) { _, _ in nil }, "a field that is not an object has no value")

        // Operations that are not an array stay a member, for the caller to refuse.
        let notAList = try XCTUnwrap(ModifyRequestBody.parse(Array(#"{"operations": {"a": 1}}"#.utf8)))
        XCTAssertNil(notAList.operations)
        XCTAssertEqual(notAList.members["operations"], ["a": 1])
        // A blank body is an empty object; JSON that is not an object is nil.
        XCTAssertNotNil(try ModifyRequestBody.parse(Array(" \n".utf8)))
        XCTAssertNil(try ModifyRequestBody.parse(Array("[1, 2]".utf8)))
    }

    func testMalformedBodiesFailAsTheParserDoes() {
        let deep = String(repeating: "[", count: 70) + String(repeating: "]", count: 70)
        for text in [
            #"{"operations": [{"record": {"fields": {"a": {"value": 1}}}}]} x"#,
            #"{"operations": [{"record": {"fields": {"a": {"value": 1,}}}}]}"#,
            #"{"operations": [{"record": {"fields": {"a": "#,
            #"{"operations": [{"record": {"fields": {"a": {"value": \#(deep)}}}}]}"#,
            #"{"operations": [,]}"#,
        ] {
            XCTAssertThrowsError(try JSONValue.parse(text), text)
            XCTAssertThrowsError(try ModifyRequestBody.parse(Array(text.utf8)), text) { error in
                XCTAssertTrue(error is JSONParseError, "\(text): \(error)")
            }
        }
    }
}
