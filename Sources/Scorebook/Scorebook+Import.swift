import Foundation
import RecordModel
import SyncEngine

/// What `import` did.
public struct ImportSummary: Equatable, Sendable {
    /// Records the book did not hold.
    public var created = 0
    /// Records the book held with other values, now the file's.
    public var updated = 0
    /// Records the book already held exactly so.
    public var unchanged = 0
    /// Records the book holds in a newer version than the file's (a later `modificationDate`),
    /// left as they are.
    public var keptNewer = 0

    public var total: Int { created + updated + unchanged + keptNewer }

    public func rendered(json: Bool) -> String {
        if json {
            return JSONText.render(["created": .int(Int64(created)), "updated": .int(Int64(updated)),
                                    "unchanged": .int(Int64(unchanged)), "keptNewer": .int(Int64(keptNewer))])
        }
        return "imported \(total) record\(total == 1 ? "" : "s"): \(created) new, \(updated) changed, \(unchanged) unchanged"
            + (keptNewer > 0 ? ", \(keptNewer) kept (newer here)" : "")
    }
}

/// A file that `import` refuses: what is wrong, and where.
struct ExportFileError: Error {
    var description: String
    init(_ description: String) { self.description = description }
}

extension Scorebook {
    /// Reads an export (JSON or CSV, told apart by its first character) into this book in one
    /// transaction, keeping record names: a record the book lacks is created, one it holds is
    /// replaced by the file's unless the book's is newer (a later `modificationDate`). A file
    /// with any problem changes nothing. Importing the same file again changes nothing.
    @discardableResult
    public func importBook(from path: String) throws -> ImportSummary {
        let data: Data
        do {
            data = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw ScorebookError(.invalidInput, "cannot read \(path): \((error as NSError).localizedDescription)")
        }
        do {
            return try importBook(BookExport(fileContents: data))
        } catch let error as ExportFileError {
            throw ScorebookError(.invalidInput, "\(path) cannot be imported: \(error.description); nothing was imported")
        }
    }

    /// Applies an export to this book in one transaction (see `importBook(from:)`).
    func importBook(_ book: BookExport) throws -> ImportSummary {
        try book.check()
        // Parents first, so the outbox sends them first; otherwise in file order.
        let order = Dictionary(uniqueKeysWithValues: ExportKind.all.enumerated().map { ($1.recordType, $0) })
        let rows = book.rows.enumerated().sorted {
            let (left, right) = (order[$0.element.recordType] ?? .max, order[$1.element.recordType] ?? .max)
            return left != right ? left < right : $0.offset < $1.offset
        }.map(\.element)
        let inFile = Dictionary(book.rows.map { ($0.recordName, $0.recordType) }, uniquingKeysWith: { first, _ in first })
        return try store.edit { editor in
            var summary = ImportSummary()
            for row in rows {
                guard let kind = ExportKind.kind(ofType: row.recordType) else { continue }
                for field in kind.fields {
                    guard case .reference(let targetType) = field.kind, let target = row.reference(field.name) else { continue }
                    if let type = inFile[target] {
                        guard type == targetType else {
                            throw ExportFileError("\(row.recordName): its \(field.name) \(target) is a \(type), not a \(targetType)")
                        }
                    } else if let local = try editor.record(named: target) {
                        guard local.recordType == targetType else {
                            throw ExportFileError("\(row.recordName): its \(field.name) \(target) is a \(local.recordType) here, not a \(targetType)")
                        }
                    } else {
                        throw ExportFileError("\(row.recordName): its \(field.name) \(target) is neither in the file nor in this book")
                    }
                }
                let imported = kind.make(row)
                if let existing = try editor.record(named: row.recordName) {
                    guard existing.recordType == row.recordType else {
                        throw ExportFileError("\(row.recordName) is a \(existing.recordType) in this book, not a \(row.recordType)")
                    }
                    if let local = try? type(of: imported).init(record: existing) {
                        if Self.sameContent(local, imported) {
                            summary.unchanged += 1
                            continue
                        }
                        if local.modificationDate > imported.modificationDate {
                            summary.keptNewer += 1
                            continue
                        }
                    }
                    summary.updated += 1
                } else {
                    summary.created += 1
                }
                try editor.save(Self.localRecord(of: imported))
            }
            return summary
        }
    }
}

extension BookExport {
    /// Reads a file written by `export`: JSON when it starts with `{`, else CSV.
    init(fileContents data: Data) throws {
        guard let text = String(data: data, encoding: .utf8) else { throw ExportFileError("it is not UTF-8 text") }
        let start = text.drop { $0.isWhitespace || $0 == "\u{FEFF}" }
        guard let first = start.first else { throw ExportFileError("it is empty") }
        if first == "{" {
            try self.init(jsonText: text)
        } else if start.hasPrefix("recordType,") || start.hasPrefix("\"recordType\",") {
            try self.init(csvText: String(start))
        } else {
            throw ExportFileError("it is neither a JSON nor a CSV scorebook export")
        }
    }

    /// Checks what each format's reader cannot: unique record names of the right type, every
    /// required field, values in range.
    func check() throws {
        var seen: Set<String> = []
        for row in rows {
            guard let kind = ExportKind.kind(ofType: row.recordType) else {
                throw ExportFileError("\(row.recordName): unknown record type \"\(row.recordType)\"")
            }
            do {
                try Names.validateRecordName(row.recordName)
            } catch {
                throw ExportFileError("\"\(row.recordName)\" is not a record name (1-255 printable ASCII characters, not starting with _)")
            }
            guard RecordNaming.recordType(fromRecordName: row.recordName) == row.recordType,
                  !RecordNaming.identifier(ofRecordName: row.recordName).isEmpty
            else {
                throw ExportFileError("\(row.recordName): a \(row.recordType)'s record name starts with \"\(row.recordType)|~|\"")
            }
            guard seen.insert(row.recordName).inserted else { throw ExportFileError("\(row.recordName) appears twice") }
            for field in kind.fields {
                guard let value = row.values[field.name] else {
                    if field.required { throw ExportFileError("\(row.recordName) has no \(field.name)") }
                    continue
                }
                switch (field.kind, value) {
                case (.name, .text(let text)):
                    guard !text.trimmingCharacters(in: .whitespacesAndNewlines).isEmpty else {
                        throw ExportFileError("\(row.recordName): \(field.name) is blank")
                    }
                case (.number, .number(let number)):
                    guard number.isFinite else { throw ExportFileError("\(row.recordName): \(field.name) is not a finite number") }
                case (.location, .location(let latitude, let longitude)):
                    guard latitude.isFinite, (-90...90).contains(latitude), longitude.isFinite, (-180...180).contains(longitude) else {
                        throw ExportFileError("\(row.recordName): latitude must be within -90…90 and longitude within -180…180")
                    }
                case (.text, .text), (.integer, .integer), (.flag, .flag), (.date, .date), (.reference, .reference):
                    break
                default:
                    throw ExportFileError("\(row.recordName): \(field.name) has the wrong type")
                }
            }
        }
    }
}
