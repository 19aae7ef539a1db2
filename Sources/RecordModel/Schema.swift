/// A set of record types and their fields, as declared in a CloudKit schema file (`.ckdb`).
///
/// ```swift
/// let schema = try Schema.parse("RECORD TYPE Game (name STRING QUERYABLE, lowScoreWins INT64)")
/// schema.fieldType(recordType: "Game", field: "name")   // .string
/// ```
///
/// System fields (names starting with `___`, such as `___createTime`) are implicit on every record
/// and are not listed in `fields`.
public struct Schema: Sendable, Equatable {
    /// Record types by name.
    public var recordTypes: [String: RecordTypeSchema]

    public init(recordTypes: [String: RecordTypeSchema] = [:]) {
        self.recordTypes = recordTypes
    }

    /// The declared type of `field` in `recordType`; nil if either is not in the schema.
    public func fieldType(recordType: String, field: String) -> FieldType? {
        recordTypes[recordType]?.fields[field]?.type
    }
}

/// One record type of a `Schema`.
public struct RecordTypeSchema: Sendable, Equatable {
    public var name: String
    /// The declared (non-system) fields by name.
    public var fields: [String: FieldSchema]

    public init(name: String, fields: [String: FieldSchema] = [:]) {
        self.name = name
        self.fields = fields
    }
}

/// One field of a record type, with the index options the schema gives it.
public struct FieldSchema: Sendable, Equatable {
    public var name: String
    public var type: FieldType
    public var isQueryable: Bool
    public var isSortable: Bool
    public var isSearchable: Bool

    public init(name: String, type: FieldType, isQueryable: Bool = false, isSortable: Bool = false, isSearchable: Bool = false) {
        self.name = name
        self.type = type
        self.isQueryable = isQueryable
        self.isSortable = isSortable
        self.isSearchable = isSearchable
    }
}
