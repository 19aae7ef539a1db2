import Foundation
import SyncEngine

/// The CSV export: one file, one row per record, a `recordType` column first, then the union of
/// every type's fields (a cell that does not apply to a row's type is empty):
///
/// ```
/// recordType,recordName,modificationDate,firstName,lastName,emailAddress,name,lowScoreWins,game,startDate,endDate,notes,match,person,seat,player,value,round,latitude,longitude
/// Person,Person|~|…,2026-11-24T16:00:00.000Z,Ann,Lee,ann@example.com,,,,,,,,,,,,,,
/// ```
///
/// RFC 4180 quoting (a cell holding a comma, quote or line break is quoted, quotes doubled),
/// lines ending in LF (CRLF read too). Empty cells are absent values; dates are ISO-8601 UTC,
/// `lowScoreWins` is `true`/`false`, numbers are written exactly (they read back bit for bit).
extension BookExport {
    /// Column names in file order.
    static let csvColumns: [String] = {
        var columns = ["recordType", "recordName", "modificationDate"]
        for kind in ExportKind.all {
            for field in kind.fields {
                for column in csvColumns(of: field) where !columns.contains(column) { columns.append(column) }
            }
        }
        return columns
    }()

    static func csvColumns(of field: ExportField) -> [String] {
        field.kind == .location ? ["latitude", "longitude"] : [field.name]
    }

    public var csvText: String {
        var lines = [Self.csvColumns.map(Self.csvCell).joined(separator: ",")]
        for row in rows {
            var cells: [String: String] = [
                "recordType": row.recordType, "recordName": row.recordName,
                "modificationDate": ISO8601.string(from: row.modificationDate),
            ]
            for (name, value) in row.values {
                switch value {
                case .text(let text), .reference(let text): cells[name] = text
                case .integer(let number): cells[name] = String(number)
                case .number(let number): cells[name] = Self.exactText(number)
                case .flag(let flag): cells[name] = flag ? "true" : "false"
                case .date(let date): cells[name] = ISO8601.string(from: date)
                case .location(let latitude, let longitude):
                    cells["latitude"] = Self.exactText(latitude)
                    cells["longitude"] = Self.exactText(longitude)
                }
            }
            lines.append(Self.csvColumns.map { Self.csvCell(cells[$0] ?? "") }.joined(separator: ","))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// A number that reads back as exactly the same Double: `12`, `0.1`, `0.30000000000000004`.
    static func exactText(_ number: Double) -> String {
        if number.rounded() == number, abs(number) < 1e15 { return String(Int64(number)) }
        return number.description
    }

    static func csvCell(_ text: String) -> String {
        guard text.contains(where: { $0 == "," || $0 == "\"" || $0.isNewline }) else { return text }
        return "\"" + text.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    init(csvText text: String) throws {
        let records = try Self.parseCSV(text)
        guard let header = records.first else { throw ExportFileError("it is empty") }
        var columnIndex: [String: Int] = [:]
        for (index, name) in header.cells.enumerated() {
            guard Self.csvColumns.contains(name) else { throw ExportFileError("line 1: unknown column \"\(name)\"") }
            guard columnIndex[name] == nil else { throw ExportFileError("line 1: column \"\(name)\" appears twice") }
            columnIndex[name] = index
        }
        for required in ["recordType", "recordName", "modificationDate"] where columnIndex[required] == nil {
            throw ExportFileError("line 1: there is no \(required) column")
        }
        var rows: [ExportRow] = []
        for record in records.dropFirst() {
            if record.cells.allSatisfy(\.isEmpty) { continue }
            let line = "line \(record.line)"
            guard record.cells.count == header.cells.count else {
                throw ExportFileError("\(line) has \(record.cells.count) cells, the header \(header.cells.count)")
            }
            func cell(_ column: String) -> String { columnIndex[column].map { record.cells[$0] } ?? "" }
            let type = cell("recordType")
            guard let kind = ExportKind.kind(ofType: type) else { throw ExportFileError("\(line): unknown recordType \"\(type)\"") }
            let name = cell("recordName")
            guard !name.isEmpty else { throw ExportFileError("\(line) has no recordName") }
            let place = "\(line) (\(name))"
            guard let date = Self.date(cell("modificationDate")) else {
                throw ExportFileError("\(place): modificationDate must be an ISO-8601 date")
            }
            var values: [String: ExportValue] = [:]
            var used: Set<String> = ["recordType", "recordName", "modificationDate"]
            for field in kind.fields {
                let columns = Self.csvColumns(of: field)
                used.formUnion(columns)
                let texts = columns.map(cell)
                if texts.allSatisfy(\.isEmpty) { continue }
                guard let value = Self.value(texts, kind: field.kind) else {
                    throw ExportFileError("\(place): \(columns.joined(separator: " and ")) must be \(Self.describe(field.kind)), "
                        + "not \"\(texts.joined(separator: ",").prefix(60))\"")
                }
                values[field.name] = value
            }
            for column in Self.csvColumns where !used.contains(column) && !cell(column).isEmpty {
                throw ExportFileError("\(place): \(column) does not apply to a \(type)")
            }
            rows.append(ExportRow(recordType: type, recordName: name, modificationDate: date, values: values))
        }
        self.init(rows: rows)
    }

    static func value(_ texts: [String], kind: ExportFieldKind) -> ExportValue? {
        let text = texts[0]
        switch kind {
        case .name, .text: return .text(text)
        case .reference: return .reference(text)
        case .integer: return Int64(text).map(ExportValue.integer)
        case .number: return Double(text).map(ExportValue.number)
        case .flag:
            switch text.lowercased() {
            case "true", "1": return .flag(true)
            case "false", "0": return .flag(false)
            default: return nil
            }
        case .date: return date(text).map(ExportValue.date)
        case .location:
            guard texts.count == 2, let latitude = Double(texts[0]), let longitude = Double(texts[1]) else { return nil }
            return .location(latitude: latitude, longitude: longitude)
        }
    }

    /// RFC 4180 records with the line each starts on. Works on Unicode scalars: as Characters,
    /// CR LF is one grapheme.
    static func parseCSV(_ text: String) throws -> [(line: Int, cells: [String])] {
        var records: [(line: Int, cells: [String])] = []
        var cells: [String] = []
        var cell = String.UnicodeScalarView()
        var line = 1
        var recordLine = 1
        var quoted = false
        var afterQuote = false
        var scalars = text.unicodeScalars.makeIterator()
        var pending: Unicode.Scalar?
        func endCell() {
            cells.append(String(cell))
            cell = String.UnicodeScalarView()
            afterQuote = false
        }
        func endRecord() {
            endCell()
            records.append((recordLine, cells))
            cells = []
        }
        while let scalar = pending ?? scalars.next() {
            pending = nil
            if quoted {
                if scalar == "\"" {
                    let next = scalars.next()
                    if next == "\"" {
                        cell.append("\"")
                    } else {
                        quoted = false
                        afterQuote = true
                        pending = next
                    }
                } else {
                    if scalar == "\n" { line += 1 }
                    cell.append(scalar)
                }
                continue
            }
            switch scalar {
            case ",":
                endCell()
            case "\r", "\n":
                if scalar == "\r" {
                    let next = scalars.next()
                    if next != "\n" { pending = next }
                }
                endRecord()
                line += 1
                recordLine = line
            case "\"":
                guard cell.isEmpty, !afterQuote else { throw ExportFileError("line \(line): a quote inside an unquoted cell") }
                quoted = true
            default:
                guard !afterQuote else { throw ExportFileError("line \(line): text after a closing quote") }
                cell.append(scalar)
            }
        }
        if quoted { throw ExportFileError("line \(recordLine): a quoted cell is never closed") }
        if !cell.isEmpty || !cells.isEmpty || afterQuote { endRecord() }
        return records
    }
}
