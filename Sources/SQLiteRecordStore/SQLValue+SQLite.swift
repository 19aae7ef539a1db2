import RecordStore
import SQLiteDB

/// The store's value (RecordStore's): SQLiteDB, imported beside it, names one `SQLValue` too.
typealias SQLValue = RecordStore.SQLValue

extension SQLValue {
    /// The value as the SQLite wrapper binds it.
    package var sqlite: SQLiteDB.SQLValue {
        switch self {
        case .null: return .null
        case .int(let value): return .int(value)
        case .double(let value): return .double(value)
        case .text(let text): return .text(text)
        case .blob(let bytes): return .blob(bytes)
        }
    }

    /// A value the SQLite wrapper read.
    package init(_ value: SQLiteDB.SQLValue) {
        switch value {
        case .null: self = .null
        case .int(let value): self = .int(value)
        case .double(let value): self = .double(value)
        case .text(let text): self = .text(text)
        case .blob(let bytes): self = .blob(bytes)
        }
    }
}
