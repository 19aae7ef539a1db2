/// The declared type of a column written by a bulk insert (PostgreSQL's `unnest` needs the
/// arrays' types; SQLite ignores them).
package enum StoreColumnType: String, Sendable {
    case integer = "bigint"
    case real = "double precision"
    case text = "text"
    case blob = "bytea"
}

/// A column of a bulk insert: its name and type.
package struct StoreColumn: Sendable, Equatable {
    package var name: String
    package var type: StoreColumnType

    package init(_ name: String, _ type: StoreColumnType) {
        self.name = name
        self.type = type
    }
}
