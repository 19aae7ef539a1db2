import XCTest

@testable import RecordModel

/// The JSON codec the daemon parses every request with: what it accepts, what it rejects (with an
/// error, never a crash), and what it writes.
final class JSONValueTests: XCTestCase {
    func parse(_ text: String) throws -> JSONValue { try JSONValue.parse(text) }

    func assertRejected(_ text: String, _ message: String? = nil, file: StaticString = #filePath, line: UInt = #line) {
        XCTAssertThrowsError(try JSONValue.parse(text), text.debugDescription, file: file, line: line) { error in
            guard let parseError = error as? JSONParseError else { return XCTFail("not a JSONParseError: \(error)", file: file, line: line) }
            if let message { XCTAssertTrue(parseError.message.contains(message), parseError.description, file: file, line: line) }
        }
    }

    func testLiteralsNumbersAndStructures() throws {
        XCTAssertEqual(try parse("null"), .null)
        XCTAssertEqual(try parse(" true "), .bool(true))
        XCTAssertEqual(try parse("false"), .bool(false))
        XCTAssertEqual(try parse("0"), .int(0))
        XCTAssertEqual(try parse("-42"), .int(-42))
        XCTAssertEqual(try parse("9223372036854775807"), .int(.max))
        XCTAssertEqual(try parse("-9223372036854775808"), .int(.min))
        XCTAssertEqual(try parse("9223372036854775808"), .double(9.223372036854775808e18), "past Int64 an integer is a double")
        XCTAssertEqual(try parse("1.5"), .double(1.5))
        XCTAssertEqual(try parse("3.0"), .double(3), "a fraction makes a double")
        XCTAssertEqual(try parse("1e2"), .double(100))
        XCTAssertEqual(try parse("-2.5E-3"), .double(-0.0025))
        XCTAssertEqual(try parse("[1, [2, []], {}]"), [1, [2, []], [:]])
        XCTAssertEqual(try parse("{\"a\": {\"b\": [true, null]}}"), ["a": ["b": [true, nil]]])
        XCTAssertEqual(try parse("{\"k\": 1, \"k\": 2}"), ["k": 2], "a repeated key keeps the last value")
        XCTAssertEqual(try parse("\t\r\n [ ] \n"), [])
    }

    func testStringEscapesAndUnicode() throws {
        XCTAssertEqual(try parse(#""a\"b\\c\/d\b\f\n\r\t""#), .string("a\"b\\c/d\u{8}\u{C}\n\r\t"))
        XCTAssertEqual(try parse(#""\u00e9\u4e2d""#), .string("é中"))
        XCTAssertEqual(try parse(#""\ud83c\udfb2""#), .string("🎲"), "a surrogate pair is one scalar")
        XCTAssertEqual(try parse("\"🎲 raw UTF-8 ✓\""), .string("🎲 raw UTF-8 ✓"))
        XCTAssertEqual(try parse(#""\u0000""#), .string("\u{0}"), "an escaped NUL is allowed")
    }

    func testMalformedInputIsRejectedWithAnError() {
        assertRejected("", "end of input")
        assertRejected("   ")
        assertRejected("{")
        assertRejected("{\"a\":1", "end of input")
        assertRejected("[1,2", "end of input")
        assertRejected("[1,]")
        assertRejected("{\"a\" 1}", "':'")
        assertRejected("{a:1}", "string key")
        assertRejected("{\"a\":1,}")
        assertRejected("tru")
        assertRejected("nul")
        assertRejected("True")
        assertRejected("01")
        assertRejected("-")
        assertRejected("1.")
        assertRejected(".5")
        assertRejected("1e")
        assertRejected("+1")
        assertRejected("NaN")
        assertRejected("Infinity")
        assertRejected("1e400", "out of range")
        assertRejected("-1e400", "out of range")
        assertRejected(String(repeating: "9", count: 401), "too long")
        assertRejected("\"abc", "unterminated")
        assertRejected("\"a\nb\"", "control character")
        assertRejected(#""\x""#, "invalid escape")
        assertRejected(#""\u12""#)
        assertRejected(#""\u12G4""#, "hex")
        assertRejected(#""\ud83c""#, "surrogate")
        assertRejected(#""\ud83cx""#, "surrogate")
        assertRejected(#""\udfb2""#, "surrogate")
        assertRejected(#""\ud83c\u0041""#, "surrogate")
        assertRejected("1 2", "after the JSON value")
        assertRejected("{} {}", "after the JSON value")
        assertRejected("'single'")
    }

    func testInvalidUTF8IsRejected() {
        for bytes: [UInt8] in [[0x22, 0xFF, 0x22], [0x22, 0xC3, 0x22], [0x22, 0xED, 0xA0, 0x80, 0x22], [0x22, 0xC0, 0xAF, 0x22],
                               [0x5B, 0x22, 0x61, 0x5C, 0x6E, 0xFE, 0x22, 0x5D]]
        {
            XCTAssertThrowsError(try JSONValue.parse(bytes), "\(bytes)") { XCTAssertTrue($0 is JSONParseError) }
        }
    }

    func testNestingIsLimitedNotRecursedInto() throws {
        let depth = JSONValue.maximumDepth
        XCTAssertNoThrow(try parse(String(repeating: "[", count: depth) + String(repeating: "]", count: depth)))
        assertRejected(String(repeating: "[", count: depth + 1) + String(repeating: "]", count: depth + 1), "nesting")
        assertRejected(String(repeating: "{\"a\":", count: depth + 1) + "1" + String(repeating: "}", count: depth + 1), "nesting")
        // Far deeper than any stack would survive if the parser recursed without a limit.
        assertRejected(String(repeating: "[", count: 100_000), "nesting")
        assertRejected(String(repeating: "{\"a\":[", count: 50_000), "nesting")
    }

    func testTheErrorNamesTheByteOffset() {
        XCTAssertThrowsError(try JSONValue.parse("[1, 2, x]")) { error in
            XCTAssertEqual((error as? JSONParseError)?.offset, 7)
            XCTAssertTrue("\(error)".contains("byte 7"))
        }
    }

    func testSerializationIsCompactAndEscapes() throws {
        XCTAssertEqual(JSONValue.array([1, 2.5, "x", nil, true]).serializedString(), #"[1,2.5,"x",null,true]"#)
        XCTAssertEqual(JSONValue.string("q\"b\\n\n\r\t\u{1}é").serializedString(), #""q\"b\\n\n\r\t\u0001é""#)
        XCTAssertEqual(JSONValue.double(3).serializedString(), "3.0", "a whole double stays a double")
        XCTAssertEqual(JSONValue.double(-0.5).serializedString(), "-0.5")
        XCTAssertEqual(JSONValue.double(.infinity).serializedString(), "null", "never invalid JSON")
        XCTAssertEqual(JSONValue.double(.nan).serializedString(), "null")
        XCTAssertEqual(JSONValue.object(["k": .raw(Array(#"{"x":1}"#.utf8))]).serializedString(), #"{"k":{"x":1}}"#)
        XCTAssertEqual(try parse(JSONValue.double(1e300).serializedString()), .double(1e300))
        XCTAssertEqual(try parse(JSONValue.double(Double.leastNonzeroMagnitude).serializedString()), .double(Double.leastNonzeroMagnitude))
        XCTAssertEqual(try parse(JSONValue.int(.min).serializedString()), .int(.min))
        for integer in [0, 7, -1, 10, 1_700_000_000_000, Int64.max, Int64.min] {
            XCTAssertEqual(JSONValue.int(integer).serializedString(), String(integer))
        }
    }

    /// Strings are looked at eight bytes at a time for a byte to escape: one at any position of
    /// any length, beside multi-byte characters, is escaped exactly as a byte-by-byte writer would.
    func testEveryByteToEscapeIsFoundAtEveryPosition() {
        func expected(_ text: String) -> String {
            var out = "\""
            for scalar in text.unicodeScalars {
                switch scalar {
                case "\"": out += "\\\""
                case "\\": out += "\\\\"
                case "\n": out += "\\n"
                case "\r": out += "\\r"
                case "\t": out += "\\t"
                case _ where scalar.value < 0x20: out += "\\u00" + (scalar.value < 0x10 ? "0" : "") + String(scalar.value, radix: 16)
                default: out.unicodeScalars.append(scalar)
                }
            }
            return out + "\""
        }
        for special in ["\"", "\\", "\n", "\u{1}", "\u{1F}", "\t"] {
            for length in 0...20 {
                for position in 0...length {
                    let base = String(repeating: "aé ~", count: 6).prefix(length)
                    let text = String(base.prefix(position)) + special + String(base.dropFirst(position))
                    XCTAssertEqual(JSONValue.string(text).serializedString(), expected(text))
                }
                let clean = String(String(repeating: "Zz0 ü\u{7F}", count: 4).prefix(length))
                XCTAssertEqual(JSONValue.string(clean).serializedString(), expected(clean))
            }
        }
    }

    /// A whole answer written in one buffer (`rawArray(under:)`, `records/modify`'s) is valid JSON
    /// of the same shape as the object it stands for, and `serialized()` hands it on as it is.
    func testARawAnswerIsTheObjectItStandsFor() throws {
        let names = ["a", "b\"c", "é"]
        let answer = JSONValue.rawArray(names, under: "records", estimatedBytes: { $0.utf8.count + 20 }) { name, out in
            JSONValue.object(["recordName": .string(name)]).serialize(into: &out)
        }
        let expected: JSONValue = ["records": .array(names.map { ["recordName": .string($0)] })]
        XCTAssertEqual(try parse(answer.serializedString()), expected)
        XCTAssertEqual(JSONValue.rawArray([Int](), under: "records", estimatedBytes: { _ in 1 }) { _, _ in }.serializedString(),
                       #"{"records":[]}"#)
        XCTAssertEqual(JSONValue.rawArray([1, 2], estimatedBytes: { _ in 1 }) { number, out in
            JSONValue.int(Int64(number)).serialize(into: &out)
        }.serializedString(), "[1,2]", "without a key, the array alone")
        guard case .raw(let bytes) = answer else { return XCTFail("rawArray makes raw bytes") }
        XCTAssertEqual(answer.serialized(), bytes)
    }

    func testAccessors() {
        let value: JSONValue = ["s": "x", "i": 3, "d": 3.0, "f": 3.5, "b": true, "a": [1], "o": [:], "n": nil]
        XCTAssertEqual(value["s"]?.stringValue, "x")
        XCTAssertEqual(value["i"]?.int64Value, 3)
        XCTAssertEqual(value["d"]?.int64Value, 3, "a whole double reads as an integer")
        XCTAssertNil(value["f"]?.int64Value)
        XCTAssertEqual(value["i"]?.doubleValue, 3)
        XCTAssertEqual(value["b"]?.boolValue, true)
        XCTAssertEqual(value["a"]?.arrayValue, [1])
        XCTAssertEqual(value["o"]?.objectValue, [:])
        XCTAssertEqual(value["n"]?.isNull, true)
        XCTAssertNil(value["missing"])
        XCTAssertNil(JSONValue.array([])["key"])
        XCTAssertNil(JSONValue.double(1e19).int64Value, "out of Int64 range")
    }
}
