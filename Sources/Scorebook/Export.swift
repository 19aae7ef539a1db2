import Foundation
import RecordModel
import SyncEngine

/// A whole book as `scorebook export` writes it and `scorebook import` reads it: every person,
/// game, match, player, score and match location, with record names and modification dates.
/// Pictures (`MatchImage`, `Person.avatar`) are not exported.
///
/// Both formats carry the same rows; `ExportFormat+JSON.swift` and `ExportFormat+CSV.swift`
/// write and read them.
public struct BookExport: Equatable, Sendable {
    /// Rows by kind in `ExportKind.all` order (parents before children), each kind sorted by
    /// record name, so the same book always exports to the same bytes.
    public var rows: [ExportRow]

    public init(rows: [ExportRow]) { self.rows = rows }
}

/// The file formats of `export --format`.
public enum ExportFormat: String, CaseIterable, Sendable {
    case json, csv
}

/// A value of an exported field; absent fields have none.
public enum ExportValue: Equatable, Sendable {
    case text(String)
    case integer(Int64)
    case number(Double)
    case flag(Bool)
    case date(Date)
    /// A record name.
    case reference(String)
    case location(latitude: Double, longitude: Double)
}

/// One record of an export.
public struct ExportRow: Equatable, Sendable {
    public var recordType: String
    public var recordName: String
    public var modificationDate: Date
    public var values: [String: ExportValue]
}

extension ExportRow {
    func text(_ name: String) -> String? { if case .text(let text)? = values[name] { text } else { nil } }
    func reference(_ name: String) -> String? { if case .reference(let target)? = values[name] { target } else { nil } }
    func integer(_ name: String) -> Int64? { if case .integer(let value)? = values[name] { value } else { nil } }
    func number(_ name: String) -> Double? { if case .number(let value)? = values[name] { value } else { nil } }
    func flag(_ name: String) -> Bool? { if case .flag(let value)? = values[name] { value } else { nil } }
    func date(_ name: String) -> Date? { if case .date(let value)? = values[name] { value } else { nil } }
}
