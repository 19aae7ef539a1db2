/// Why a schema file did not parse, and where: `line 4, column 12: unknown field type 'STRNG'`.
///
/// Lines and columns count from 1; a column counts Unicode scalars, so a tab is one column.
public struct SchemaParseError: Error, CustomStringConvertible, Equatable, Sendable {
    public var line: Int
    public var column: Int
    public var message: String

    public init(line: Int, column: Int, message: String) {
        self.line = line
        self.column = column
        self.message = message
    }

    public var description: String { "line \(line), column \(column): \(message)" }
}

extension Schema {
    /// Parses a schema in CloudKit's schema language, as `cktool export-schema` writes it:
    ///
    /// ```
    /// DEFINE SCHEMA
    ///     CREATE ROLE Admin;
    ///     RECORD TYPE Game (
    ///         "___createTime" TIMESTAMP SORTABLE,
    ///         name            STRING QUERYABLE SORTABLE SEARCHABLE,
    ///         scores          LIST<INT64>,
    ///         GRANT READ, WRITE TO "_creator"
    ///     );
    /// ```
    ///
    /// `DEFINE SCHEMA` is optional; statements are separated by `;` (optional after the last one);
    /// names are bare identifiers or double-quoted; keywords and type names are case-insensitive;
    /// `//` and `--` start comments that run to the end of the line. Roles and grants are accepted
    /// and ignored. System fields (`___…`) are checked but not added to `RecordTypeSchema.fields`.
    ///
    /// - Throws: `SchemaParseError` at the first problem: an unknown type, a missing or stray
    ///   token, an unterminated quoted name, a duplicate record type or field.
    public static func parse(_ text: String) throws -> Schema {
        var parser = try SchemaParser(text)
        return try parser.parseSchema()
    }
}

// MARK: - Tokens

struct SchemaToken {
    enum Kind: Equatable {
        case identifier
        case quoted
        case punctuation(UInt8)
        case end
    }

    var kind: Kind
    var text: String
    var line: Int
    var column: Int

    /// How an error message shows this token.
    var quotedForMessage: String {
        switch kind {
        case .identifier: return "'\(SchemaToken.abbreviated(text))'"
        case .quoted: return "\"\(SchemaToken.abbreviated(text))\""
        case .punctuation(let byte): return "'\(Character(Unicode.Scalar(byte)))'"
        case .end: return "end of input"
        }
    }

    static func abbreviated(_ text: String) -> String {
        text.count > 40 ? String(text.prefix(40)) + "…" : text
    }
}

// MARK: - Lexer

/// Splits schema text into tokens on demand, so that a bad start fails fast however long the input.
struct SchemaLexer {
    private let bytes: [UInt8]
    private var index = 0
    private(set) var line = 1
    private(set) var column = 1

    init(_ text: String) {
        var bytes = Array(text.utf8)
        if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { bytes.removeFirst(3) }  // a byte-order mark
        self.bytes = bytes
    }

    private mutating func advance() {
        let byte = bytes[index]
        index += 1
        if byte == UInt8(ascii: "\n") {
            line += 1
            column = 1
        } else if byte & 0xC0 != 0x80 {  // not a UTF-8 continuation byte: a new scalar
            column += 1
        }
    }

    private func byte(at offset: Int) -> UInt8? {
        index + offset < bytes.count ? bytes[index + offset] : nil
    }

    /// The next token; `.end` at the end of the input, and again on every later call.
    mutating func next() throws -> SchemaToken {
        while index < bytes.count {
            let byte = bytes[index]
            let startLine = line, startColumn = column
            switch byte {
            case UInt8(ascii: " "), UInt8(ascii: "\t"), UInt8(ascii: "\n"), UInt8(ascii: "\r"), 0x0B, 0x0C:
                advance()
            case UInt8(ascii: "/") where self.byte(at: 1) == UInt8(ascii: "/"),
                 UInt8(ascii: "-") where self.byte(at: 1) == UInt8(ascii: "-"):
                while index < bytes.count, bytes[index] != UInt8(ascii: "\n") { advance() }
            case UInt8(ascii: "\""):
                advance()
                let start = index
                while index < bytes.count, bytes[index] != UInt8(ascii: "\""), bytes[index] != UInt8(ascii: "\n") {
                    advance()
                }
                guard index < bytes.count, bytes[index] == UInt8(ascii: "\"") else {
                    throw SchemaParseError(line: startLine, column: startColumn, message: "unterminated quoted name")
                }
                let text = String(decoding: bytes[start..<index], as: UTF8.self)
                advance()
                guard !text.isEmpty else {
                    throw SchemaParseError(line: startLine, column: startColumn, message: "empty quoted name")
                }
                return SchemaToken(kind: .quoted, text: text, line: startLine, column: startColumn)
            case UInt8(ascii: "("), UInt8(ascii: ")"), UInt8(ascii: ","), UInt8(ascii: ";"),
                 UInt8(ascii: "<"), UInt8(ascii: ">"):
                advance()
                return SchemaToken(kind: .punctuation(byte), text: String(Unicode.Scalar(byte)), line: startLine, column: startColumn)
            default:
                guard SchemaLexer.isIdentifierStart(byte) else {
                    throw SchemaParseError(
                        line: startLine, column: startColumn,
                        message: "unexpected character \(describeCharacter(at: index))")
                }
                let start = index
                while index < bytes.count, SchemaLexer.isIdentifierContinuation(bytes[index]) { advance() }
                let text = String(decoding: bytes[start..<index], as: UTF8.self)
                return SchemaToken(kind: .identifier, text: text, line: startLine, column: startColumn)
            }
        }
        return SchemaToken(kind: .end, text: "", line: line, column: column)
    }

    private static func isIdentifierStart(_ byte: UInt8) -> Bool {
        (byte >= UInt8(ascii: "A") && byte <= UInt8(ascii: "Z")) || (byte >= UInt8(ascii: "a") && byte <= UInt8(ascii: "z"))
            || byte == UInt8(ascii: "_")
    }

    private static func isIdentifierContinuation(_ byte: UInt8) -> Bool {
        isIdentifierStart(byte) || (byte >= UInt8(ascii: "0") && byte <= UInt8(ascii: "9"))
    }

    /// The character starting at `offset`, quoted, or its code point if it is invisible.
    private func describeCharacter(at offset: Int) -> String {
        let lead = bytes[offset]
        let length: Int
        switch lead {
        case 0xC0...0xDF: length = 2
        case 0xE0...0xEF: length = 3
        case 0xF0...0xF7: length = 4
        default: length = 1
        }
        let text = String(decoding: bytes[offset..<min(offset + length, bytes.count)], as: UTF8.self)
        guard let scalar = text.unicodeScalars.first else { return "U+FFFD" }
        if scalar.properties.generalCategory == .control || scalar.properties.isWhitespace
            || scalar.properties.generalCategory == .format
        {
            let hex = String(scalar.value, radix: 16, uppercase: true)
            return "U+" + String(repeating: "0", count: max(0, 4 - hex.count)) + hex
        }
        return "'\(text)'"
    }
}

// MARK: - Parser

/// A recursive-descent parser with one token of lookahead. Every loop consumes a token or throws,
/// and nothing recurses on the input's nesting, so any input ends in a schema or an error.
struct SchemaParser {
    private var lexer: SchemaLexer
    private var current: SchemaToken
    private var lookahead: SchemaToken?

    init(_ text: String) throws {
        lexer = SchemaLexer(text)
        current = try lexer.next()
    }

    mutating func parseSchema() throws -> Schema {
        var schema = Schema()
        if isKeyword("DEFINE") {
            try advance()
            try expectKeyword("SCHEMA", after: "DEFINE")
        }
        while true {
            while isPunctuation(";") { try advance() }
            if current.kind == .end { break }
            try parseStatement(into: &schema)
            if isPunctuation(";") { continue }
            if current.kind == .end { break }
            throw error(at: current, "expected ';' before \(current.quotedForMessage)")
        }
        return schema
    }

    // MARK: Statements

    private mutating func parseStatement(into schema: inout Schema) throws {
        if isKeyword("CREATE") {
            try advance()
            try expectKeyword("ROLE", after: "CREATE")
            _ = try parseName("a role name")
        } else if isKeyword("RECORD") {
            try advance()
            try expectKeyword("TYPE", after: "RECORD")
            try parseRecordType(into: &schema)
        } else if isKeyword("DEFINE") {
            throw error(at: current, "DEFINE SCHEMA may appear only at the start")
        } else {
            throw error(at: current, "expected RECORD TYPE or CREATE ROLE, found \(current.quotedForMessage)")
        }
    }

    private mutating func parseRecordType(into schema: inout Schema) throws {
        let nameToken = current
        let name = try parseName("a record type name")
        if schema.recordTypes[name] != nil {
            throw error(at: nameToken, "duplicate record type '\(SchemaToken.abbreviated(name))'")
        }
        guard isPunctuation("(") else {
            throw error(at: current, "expected '(' after record type '\(SchemaToken.abbreviated(name))', found \(current.quotedForMessage)")
        }
        try advance()

        var recordType = RecordTypeSchema(name: name)
        var seenFields: Set<String> = []
        if isPunctuation(")") {
            try advance()
        } else {
            while true {
                if try isGrant() {
                    try parseGrant()
                } else {
                    try parseField(into: &recordType, seen: &seenFields)
                }
                if isPunctuation(",") {
                    try advance()
                } else if isPunctuation(")") {
                    try advance()
                    break
                } else {
                    throw error(at: current, "expected ',' or ')' in record type '\(SchemaToken.abbreviated(name))', found \(current.quotedForMessage)")
                }
            }
        }
        schema.recordTypes[name] = recordType
    }

    // MARK: Record type items

    private mutating func parseField(into recordType: inout RecordTypeSchema, seen: inout Set<String>) throws {
        let nameToken = current
        let name = try parseName("a field name or GRANT")
        guard seen.insert(name).inserted else {
            throw error(at: nameToken, "duplicate field '\(SchemaToken.abbreviated(name))' in record type '\(SchemaToken.abbreviated(recordType.name))'")
        }
        var field = FieldSchema(name: name, type: try parseType())
        while current.kind == .identifier {
            switch current.text.uppercased() {
            case "QUERYABLE": field.isQueryable = true
            case "SORTABLE": field.isSortable = true
            case "SEARCHABLE": field.isSearchable = true
            default:
                throw error(at: current, "unexpected \(current.quotedForMessage) after field '\(SchemaToken.abbreviated(name))': expected QUERYABLE, SORTABLE, SEARCHABLE, ',' or ')'")
            }
            try advance()
        }
        if !name.hasPrefix("___") {
            recordType.fields[name] = field
        }
    }

    private static let scalarTypes: [String: FieldType] = [
        "STRING": .string, "INT64": .int64, "DOUBLE": .double, "TIMESTAMP": .timestamp,
        "BYTES": .bytes, "REFERENCE": .reference, "ASSET": .asset, "LOCATION": .location,
    ]

    private mutating func parseType() throws -> FieldType {
        guard current.kind == .identifier else {
            throw error(at: current, "expected a field type, found \(current.quotedForMessage)")
        }
        if current.text.uppercased() == "LIST" {
            try advance()
            guard isPunctuation("<") else {
                throw error(at: current, "expected '<' after LIST, found \(current.quotedForMessage)")
            }
            try advance()
            guard current.kind == .identifier else {
                throw error(at: current, "expected a list element type, found \(current.quotedForMessage)")
            }
            if current.text.uppercased() == "LIST" {
                throw error(at: current, "a list cannot contain lists")
            }
            let element = try parseScalarType()
            guard isPunctuation(">") else {
                throw error(at: current, "expected '>' after LIST<\(element.schemaName), found \(current.quotedForMessage)")
            }
            try advance()
            return .list(element)
        }
        return try parseScalarType()
    }

    private mutating func parseScalarType() throws -> FieldType {
        guard let type = SchemaParser.scalarTypes[current.text.uppercased()] else {
            throw error(at: current, "unknown field type \(current.quotedForMessage)")
        }
        try advance()
        return type
    }

    /// A bare `GRANT` followed by a permission starts a grant; otherwise `grant` is a field name.
    private mutating func isGrant() throws -> Bool {
        guard isKeyword("GRANT") else { return false }
        let next = try peek()
        return next.kind == .identifier && SchemaParser.permissions.contains(next.text.uppercased())
    }

    private static let permissions: Set<String> = ["READ", "CREATE", "WRITE"]

    private mutating func parseGrant() throws {
        try advance()  // GRANT
        while true {
            guard current.kind == .identifier, SchemaParser.permissions.contains(current.text.uppercased()) else {
                throw error(at: current, "expected READ, CREATE or WRITE, found \(current.quotedForMessage)")
            }
            try advance()
            guard isPunctuation(",") else { break }
            try advance()
        }
        try expectKeyword("TO", after: "the permissions of GRANT")
        _ = try parseName("a role name")
    }

    // MARK: Tokens

    private mutating func advance() throws {
        if let next = lookahead {
            current = next
            lookahead = nil
        } else {
            current = try lexer.next()
        }
    }

    private mutating func peek() throws -> SchemaToken {
        if let next = lookahead { return next }
        let next = try lexer.next()
        lookahead = next
        return next
    }

    private func isKeyword(_ keyword: String) -> Bool {
        current.kind == .identifier && current.text.count == keyword.count && current.text.uppercased() == keyword
    }

    private func isPunctuation(_ character: Unicode.Scalar) -> Bool {
        current.kind == .punctuation(UInt8(character.value))
    }

    private mutating func expectKeyword(_ keyword: String, after previous: String) throws {
        guard isKeyword(keyword) else {
            throw error(at: current, "expected \(keyword) after \(previous), found \(current.quotedForMessage)")
        }
        try advance()
    }

    private mutating func parseName(_ what: String) throws -> String {
        switch current.kind {
        case .identifier, .quoted:
            let name = current.text
            try advance()
            return name
        default:
            throw error(at: current, "expected \(what), found \(current.quotedForMessage)")
        }
    }

    private func error(at token: SchemaToken, _ message: String) -> SchemaParseError {
        SchemaParseError(line: token.line, column: token.column, message: message)
    }
}

extension FieldType {
    /// The name of this type in CloudKit's schema language: `ASSET` for an asset, `LIST<INT64>` for a list.
    var schemaName: String {
        switch self {
        case .asset: return "ASSET"
        case .list(let element): return "LIST<\(element.schemaName)>"
        default: return wireName
        }
    }
}
