import Foundation
import XCTest

@testable import RecordModel
import TestSupport

final class SchemaParserTests: XCTestCase {
    // MARK: The shipped schema

    /// The Scorebook schema: every record type, and every field with its type (system fields excluded).
    static let contractTypes: [String: [String: FieldType]] = [
        "Person": [
            "firstName": .string, "lastName": .string, "emailAddress": .string, "avatar": .asset,
            "modificationDate": .timestamp,
        ],
        "Game": ["name": .string, "lowScoreWins": .int64, "modificationDate": .timestamp],
        // The public game catalogue (issue 14).
        "CatalogGame": ["name": .string, "lowScoreWins": .int64, "description": .string, "modificationDate": .timestamp],
        "Match": [
            "game": .reference, "startDate": .timestamp, "endDate": .timestamp, "notes": .string,
            "modificationDate": .timestamp,
        ],
        "Player": ["match": .reference, "person": .reference, "seat": .int64, "modificationDate": .timestamp],
        "Score": ["player": .reference, "value": .double, "round": .int64, "modificationDate": .timestamp],
        "MatchImage": ["match": .reference, "image": .asset, "modificationDate": .timestamp],
        "MatchLocation": [
            "match": .reference, "name": .string, "location": .location, "modificationDate": .timestamp,
        ],
    ]

    /// The package root: the nearest directory above this file that holds `Schemas/scorebook.ckdb`.
    func packageRoot() throws -> URL {
        var directory = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while directory.pathComponents.count > 1 {
            if FileManager.default.fileExists(atPath: directory.appendingPathComponent("Schemas/scorebook.ckdb").path) {
                return directory
            }
            directory = directory.deletingLastPathComponent()
        }
        XCTFail("no Schemas/scorebook.ckdb above \(#filePath)")
        throw CocoaError(.fileNoSuchFile)
    }

    func shippedSchemaText() throws -> String {
        let url = try packageRoot().appendingPathComponent("Schemas/scorebook.ckdb")
        return try String(contentsOf: url, encoding: .utf8)
    }

    func testBuiltinSourceIsTheShippedFileVerbatim() throws {
        let fileText = try shippedSchemaText()
        XCTAssertEqual(BuiltinSchema.scorebookSource, fileText)
        XCTAssertEqual(Array(BuiltinSchema.scorebookSource.utf8), Array(fileText.utf8))
    }

    func testShippedSchemaHasEveryContractTypeAndField() throws {
        let schema = try Schema.parse(try shippedSchemaText())
        XCTAssertEqual(Set(schema.recordTypes.keys), Set(Self.contractTypes.keys))
        for (typeName, expectedFields) in Self.contractTypes {
            guard let recordType = schema.recordTypes[typeName] else {
                XCTFail("missing record type \(typeName)")
                continue
            }
            XCTAssertEqual(recordType.name, typeName)
            XCTAssertEqual(Set(recordType.fields.keys), Set(expectedFields.keys), typeName)
            for (fieldName, type) in expectedFields {
                XCTAssertEqual(recordType.fields[fieldName]?.name, fieldName)
                XCTAssertEqual(recordType.fields[fieldName]?.type, type, "\(typeName).\(fieldName)")
                XCTAssertEqual(schema.fieldType(recordType: typeName, field: fieldName), type)
            }
            XCTAssertFalse(recordType.fields.keys.contains { $0.hasPrefix("___") }, "system fields are implicit")
        }
        XCTAssertEqual(schema, BuiltinSchema.scorebook)
    }

    func testShippedSchemaIndexOptions() throws {
        let schema = BuiltinSchema.scorebook
        let name = try XCTUnwrap(schema.recordTypes["Game"]?.fields["name"])
        XCTAssertTrue(name.isQueryable)
        XCTAssertTrue(name.isSortable)
        XCTAssertTrue(name.isSearchable)
        let avatar = try XCTUnwrap(schema.recordTypes["Person"]?.fields["avatar"])
        XCTAssertFalse(avatar.isQueryable || avatar.isSortable || avatar.isSearchable)
        for (typeName, recordType) in schema.recordTypes {
            let modified = try XCTUnwrap(recordType.fields["modificationDate"], typeName)
            XCTAssertTrue(modified.isQueryable && modified.isSortable, typeName)
        }
        // References from the child side must be queryable, to find a match's players and so on.
        for (typeName, field) in [("Match", "game"), ("Player", "match"), ("Player", "person"), ("Score", "player"),
                                  ("MatchImage", "match"), ("MatchLocation", "match")] {
            XCTAssertEqual(schema.recordTypes[typeName]?.fields[field]?.isQueryable, true, "\(typeName).\(field)")
        }
    }

    func testFieldTypeLookupOfUnknownNames() {
        let schema = BuiltinSchema.scorebook
        XCTAssertNil(schema.fieldType(recordType: "Game", field: "nope"))
        XCTAssertNil(schema.fieldType(recordType: "Nope", field: "name"))
        XCTAssertNil(schema.fieldType(recordType: "Game", field: "___createTime"))
    }

    // MARK: Grammar

    func testFullGrammar() throws {
        let text = """
            -- a leading comment
            define schema   // keywords are case-insensitive
                CREATE ROLE Admin;
                create role "Scorekeepers";
                RECORD TYPE "Tagged Thing" (
                    "___recordID" REFERENCE QUERYABLE,
                    "display name" STRING searchable Queryable,
                    tags      LIST<STRING> QUERYABLE,
                    counts    list < int64 >,
                    weights   LIST<DOUBLE>,
                    times     LIST<TIMESTAMP> SORTABLE,
                    blobs     LIST<BYTES>,
                    links     LIST<REFERENCE>,
                    places    LIST<LOCATION>,
                    files     LIST<ASSET>,
                    raw       BYTES,
                    where_    LOCATION,
                    grant     STRING,          -- a field may be called grant
                    GRANT READ, WRITE TO "_creator",
                    grant create to _icloud
                );
                RECORD TYPE Empty ();
                ;;
                RECORD TYPE Last (x INT64, y DOUBLE QUERYABLE SORTABLE SEARCHABLE QUERYABLE)
            """
        let schema = try Schema.parse(text)
        XCTAssertEqual(Set(schema.recordTypes.keys), ["Tagged Thing", "Empty", "Last"])
        let tagged = try XCTUnwrap(schema.recordTypes["Tagged Thing"])
        XCTAssertEqual(tagged.fields.count, 12)
        XCTAssertEqual(tagged.fields["display name"], FieldSchema(name: "display name", type: .string, isQueryable: true, isSearchable: true))
        XCTAssertEqual(tagged.fields["tags"], FieldSchema(name: "tags", type: .list(.string), isQueryable: true))
        XCTAssertEqual(tagged.fields["counts"]?.type, .list(.int64))
        XCTAssertEqual(tagged.fields["weights"]?.type, .list(.double))
        XCTAssertEqual(tagged.fields["times"], FieldSchema(name: "times", type: .list(.timestamp), isSortable: true))
        XCTAssertEqual(tagged.fields["blobs"]?.type, .list(.bytes))
        XCTAssertEqual(tagged.fields["links"]?.type, .list(.reference))
        XCTAssertEqual(tagged.fields["places"]?.type, .list(.location))
        XCTAssertEqual(tagged.fields["files"]?.type, .list(.asset))
        XCTAssertEqual(tagged.fields["raw"]?.type, .bytes)
        XCTAssertEqual(tagged.fields["where_"]?.type, .location)
        XCTAssertEqual(tagged.fields["grant"]?.type, .string)
        XCTAssertNil(tagged.fields["___recordID"])
        XCTAssertEqual(schema.recordTypes["Empty"], RecordTypeSchema(name: "Empty"))
        XCTAssertEqual(
            schema.recordTypes["Last"]?.fields["y"],
            FieldSchema(name: "y", type: .double, isQueryable: true, isSortable: true, isSearchable: true))
        XCTAssertEqual(schema.fieldType(recordType: "Last", field: "x"), .int64)
    }

    func testAssetMapsToTheAssetIDWireType() throws {
        let schema = try Schema.parse("RECORD TYPE A (a ASSET, b LIST<ASSET>)")
        XCTAssertEqual(schema.fieldType(recordType: "A", field: "a")?.wireName, "ASSETID")
        XCTAssertEqual(schema.fieldType(recordType: "A", field: "b")?.wireName, "ASSETID_LIST")
    }

    func testEmptyInputsAreEmptySchemas() throws {
        for text in ["", "   \n\t\r\n", "// only a comment", "-- only a comment\n-- and another", "DEFINE SCHEMA", "DEFINE SCHEMA ;", "\u{FEFF}"] {
            XCTAssertEqual(try Schema.parse(text), Schema(), "for \(text.debugDescription)")
        }
    }

    func testCRLFLineEndings() throws {
        let text = BuiltinSchema.scorebookSource.replacingOccurrences(of: "\n", with: "\r\n")
        XCTAssertEqual(try Schema.parse(text), BuiltinSchema.scorebook)
    }

    // MARK: Errors

    func assertParseError(
        _ text: String, line: Int, column: Int, _ fragment: String,
        file: StaticString = #filePath, lineNumber: UInt = #line
    ) {
        do {
            let schema = try Schema.parse(text)
            XCTFail("parsed unexpectedly: \(schema)", file: file, line: lineNumber)
        } catch let error as SchemaParseError {
            XCTAssertEqual(error.line, line, "line of \(error)", file: file, line: lineNumber)
            XCTAssertEqual(error.column, column, "column of \(error)", file: file, line: lineNumber)
            XCTAssertTrue(
                error.message.contains(fragment), "\(error) does not mention \(fragment.debugDescription)",
                file: file, line: lineNumber)
            XCTAssertEqual(error.description, "line \(line), column \(column): \(error.message)", file: file, line: lineNumber)
        } catch {
            XCTFail("not a SchemaParseError: \(error)", file: file, line: lineNumber)
        }
    }

    func testUnknownType() {
        let text = "DEFINE SCHEMA\n\nRECORD TYPE Score (\n    player STRNG,\n    value DOUBLE\n);\n"
        assertParseError(text, line: 4, column: 12, "unknown field type 'STRNG'")
        do {
            _ = try Schema.parse(text)
        } catch {
            XCTAssertEqual("\(error)", "line 4, column 12: unknown field type 'STRNG'")
        }
        assertParseError("RECORD TYPE A (x LIST<STRNG>)", line: 1, column: 23, "unknown field type 'STRNG'")
        assertParseError("RECORD TYPE A (x ASSETID)", line: 1, column: 18, "unknown field type 'ASSETID'")
        assertParseError("RECORD TYPE A (x \"STRING\")", line: 1, column: 18, "expected a field type")
    }

    func testColumnsCountUnicodeScalars() {
        assertParseError("RECORD TYPE \"Spiel–Ä\" (x STRNG)", line: 1, column: 26, "unknown field type")
        assertParseError("\tRECORD TYPE A (x STRNG)", line: 1, column: 19, "unknown field type")
    }

    func testMissingParentheses() {
        assertParseError("RECORD TYPE Game name STRING)", line: 1, column: 18, "expected '(' after record type 'Game', found 'name'")
        assertParseError("RECORD TYPE Game (name STRING", line: 1, column: 30, "expected ',' or ')'")
        assertParseError("RECORD TYPE Game (name STRING", line: 1, column: 30, "end of input")
        assertParseError("RECORD TYPE Game (\n  name STRING;\n", line: 2, column: 14, "expected ',' or ')'")
    }

    func testDuplicates() {
        assertParseError("RECORD TYPE Game (\n  name STRING,\n  name INT64\n)", line: 3, column: 3, "duplicate field 'name' in record type 'Game'")
        assertParseError("RECORD TYPE G (\"___etag\" STRING, \"___etag\" STRING)", line: 1, column: 34, "duplicate field '___etag'")
        assertParseError("RECORD TYPE A (x STRING);\nRECORD TYPE A (y STRING)", line: 2, column: 13, "duplicate record type 'A'")
        assertParseError("RECORD TYPE A (x STRING);\nRECORD TYPE \"A\" (y STRING)", line: 2, column: 13, "duplicate record type 'A'")
    }

    func testUnterminatedQuote() {
        assertParseError("RECORD TYPE Game (\n  \"name STRING\n)", line: 2, column: 3, "unterminated quoted name")
        assertParseError("RECORD TYPE \"Game", line: 1, column: 13, "unterminated quoted name")
        assertParseError("RECORD TYPE \"\" (x STRING)", line: 1, column: 13, "empty quoted name")
    }

    func testOtherMalformedInputs() {
        assertParseError("RECORD TYPE A (x STRING)\nRECORD TYPE B (y STRING)", line: 2, column: 1, "expected ';'")
        assertParseError("RECORD TYPE A (x STRING,)", line: 1, column: 25, "expected a field name or GRANT, found ')'")
        assertParseError("RECORD TYPE A (x LIST<LIST<INT64>>)", line: 1, column: 23, "a list cannot contain lists")
        assertParseError("RECORD TYPE A (x LIST STRING)", line: 1, column: 23, "expected '<' after LIST")
        assertParseError("RECORD TYPE A (x LIST<STRING)", line: 1, column: 29, "expected '>'")
        assertParseError("RECORD TYPE A (x STRING) #", line: 1, column: 26, "unexpected character '#'")
        assertParseError("RECORD TYPE A (x STRING - y)", line: 1, column: 25, "unexpected character '-'")
        assertParseError("RECORD TYPE A (x STRING QUERYABEL)", line: 1, column: 25, "unexpected 'QUERYABEL' after field 'x'")
        assertParseError("RECORD TYPE A (GRANT READ TO)", line: 1, column: 29, "expected a role name, found ')'")
        assertParseError("RECORD TYPE A (GRANT READ, DELETE TO \"_world\")", line: 1, column: 28, "expected READ, CREATE or WRITE")
        assertParseError("RECORD TYPE A (GRANT READ \"_world\")", line: 1, column: 27, "expected TO")
        assertParseError("RECORD A (x STRING)", line: 1, column: 8, "expected TYPE after RECORD")
        assertParseError("CREATE TABLE x", line: 1, column: 8, "expected ROLE after CREATE")
        assertParseError("DEFINE x", line: 1, column: 8, "expected SCHEMA after DEFINE")
        assertParseError("DEFINE SCHEMA DEFINE SCHEMA", line: 1, column: 15, "only at the start")
        assertParseError("SELECT * FROM Game", line: 1, column: 1, "expected RECORD TYPE or CREATE ROLE, found 'SELECT'")
        assertParseError("RECORD TYPE A (x STRING);\u{0}", line: 1, column: 26, "unexpected character U+0000")
        assertParseError("RECORD TYPE ( x STRING)", line: 1, column: 13, "expected a record type name, found '('")
    }

    func testHugeTokensAreAbbreviatedInMessages() throws {
        let long = String(repeating: "X", count: 100_000)
        do {
            _ = try Schema.parse("RECORD TYPE A (x \(long))")
            XCTFail("parsed")
        } catch let error as SchemaParseError {
            XCTAssertLessThan(error.description.count, 200)
        }
    }

    // MARK: Robustness


    static let fragments: [String] = [
        "RECORD", "TYPE", "RECORD TYPE ", "(", ")", ",", ";", "<", ">", "LIST<", "LIST<LIST<", "\"", "\"\"",
        "--", "//", "\n", " ", "\t", "DEFINE SCHEMA", "CREATE ROLE ", "GRANT ", "GRANT READ, WRITE TO ", "READ",
        "TO", "STRING", "INT64", "ASSET", "ASSETID", "STRNG", "QUERYABLE", "SORTABLE", "SEARCHABLE", "___etag",
        "name", "x", "Ä", "✓", "#", "\u{0}", "\r\n", "-", "/", "0",
    ]

    /// Parses `text` and checks that it either succeeds or throws a SchemaParseError whose position
    /// lies inside the text (or just past its end).
    func checkParse(_ text: String, successes: inout Int, failures: inout Int) {
        do {
            let schema = try Schema.parse(text)
            for recordType in schema.recordTypes.values {
                XCTAssertFalse(recordType.fields.keys.contains { $0.hasPrefix("___") })
            }
            successes += 1
        } catch let error as SchemaParseError {
            failures += 1
            let lines = Array(text.unicodeScalars).split(separator: "\n", omittingEmptySubsequences: false)
            XCTAssertGreaterThanOrEqual(error.line, 1)
            XCTAssertLessThanOrEqual(error.line, lines.count, "\(error) for \(text.debugDescription)")
            XCTAssertGreaterThanOrEqual(error.column, 1)
            if error.line <= lines.count {
                XCTAssertLessThanOrEqual(error.column, lines[error.line - 1].count + 1, "\(error) for \(text.debugDescription)")
            }
            XCTAssertFalse(error.message.isEmpty)
        } catch {
            XCTFail("not a SchemaParseError: \(error)")
        }
    }

    func testMutatedSchemasParseOrFailCleanly() {
        var random = SplitMix64(seed: 0x5C0E_B00C)
        let original = Array(BuiltinSchema.scorebookSource.utf8)
        var successes = 0, failures = 0
        for _ in 0..<3000 {
            var bytes = original
            let mutations = 1 + random.below(3)
            for _ in 0..<mutations {
                let position = random.below(bytes.count + 1)
                switch random.below(8) {
                case 0:  // truncate
                    bytes.removeSubrange(position...)
                case 1:  // delete a run
                    bytes.removeSubrange(position..<min(bytes.count, position + 1 + random.below(40)))
                case 2:  // insert a random byte
                    bytes.insert(UInt8(truncatingIfNeeded: random.next()), at: position)
                case 3:  // overwrite a byte
                    if position < bytes.count { bytes[position] = UInt8(truncatingIfNeeded: random.next()) }
                case 4:  // duplicate a run
                    let end = min(bytes.count, position + 1 + random.below(200))
                    bytes.insert(contentsOf: bytes[position..<end], at: end)
                case 5:  // insert a token of the language
                    bytes.insert(contentsOf: Array(random.pick(Self.fragments).utf8), at: position)
                case 6:  // swap whitespace for other whitespace: always still valid
                    if let index = bytes[position...].firstIndex(where: { $0 == 0x20 || $0 == 0x09 }) {
                        bytes[index] = random.pick([0x20, 0x09])
                    }
                default:  // flip the case of a letter: keywords are case-insensitive, names are not
                    if position < bytes.count, (0x41...0x5A).contains(bytes[position] & ~0x20) { bytes[position] ^= 0x20 }
                }
            }
            let text = String(decoding: bytes, as: UTF8.self)
            checkParse(text, successes: &successes, failures: &failures)
        }
        XCTAssertEqual(successes + failures, 3000)
        XCTAssertGreaterThan(successes, 0)
        XCTAssertGreaterThan(failures, 0)
    }

    func testRandomTokenSoupParsesOrFailsCleanly() {
        var random = SplitMix64(seed: 42)
        var successes = 0, failures = 0
        for _ in 0..<2000 {
            var text = ""
            for _ in 0..<random.below(60) { text += random.pick(Self.fragments) + random.pick(["", " "]) }
            checkParse(text, successes: &successes, failures: &failures)
        }
        XCTAssertEqual(successes + failures, 2000)
    }

    func testHugeInputsEndQuickly() throws {
        var successes = 0, failures = 0
        let huge: [String] = [
            String(repeating: "(", count: 200_000),
            "RECORD TYPE A (x " + String(repeating: "LIST<", count: 100_000),
            "RECORD TYPE A (\"" + String(repeating: "a", count: 500_000),
            "// " + String(repeating: "comment ", count: 100_000),
            String(repeating: ";", count: 200_000),
            String(repeating: "RECORD TYPE ", count: 50_000),
            "RECORD TYPE A (" + String(repeating: "GRANT READ, ", count: 50_000),
        ]
        for text in huge { checkParse(text, successes: &successes, failures: &failures) }
        XCTAssertEqual(successes, 2)  // the comment and the semicolons

        let manyFields = "RECORD TYPE Wide (" + (0..<20_000).map { "f\($0) INT64 QUERYABLE" }.joined(separator: ",\n") + ");"
        XCTAssertEqual(try Schema.parse(manyFields).recordTypes["Wide"]?.fields.count, 20_000)

        let manyTypes = (0..<5_000).map { "RECORD TYPE T\($0) (x STRING)" }.joined(separator: ";\n")
        XCTAssertEqual(try Schema.parse(manyTypes).recordTypes.count, 5_000)
    }
}
