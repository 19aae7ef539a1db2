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

/// What an exported field holds.
enum ExportFieldKind: Equatable {
    /// A name: not blank.
    case name
    /// Free text.
    case text
    case integer
    case number
    case flag
    case date
    /// A record name of the given type.
    case reference(String)
    /// JSON `"location": {"latitude", "longitude"}`; CSV columns `latitude` and `longitude`.
    case location
}

struct ExportField {
    var name: String
    var kind: ExportFieldKind
    var required: Bool
}

/// One exported entity type: its fields, and how an entity becomes a row and back.
struct ExportKind {
    var recordType: String
    /// The JSON key of its array.
    var section: String
    var fields: [ExportField]
    var values: (any CloudKitCompatible) -> [String: ExportValue]
    /// The entity of a checked row (every required field present, each of its kind).
    var make: (ExportRow) -> any CloudKitCompatible

    static func kind(ofType recordType: String) -> ExportKind? { all.first { $0.recordType == recordType } }

    /// Parents before children: a row's references point at earlier kinds.
    static let all: [ExportKind] = [
        ExportKind(
            recordType: Person.recordType, section: "people",
            fields: [.init(name: "firstName", kind: .name, required: true), .init(name: "lastName", kind: .text, required: false),
                     .init(name: "emailAddress", kind: .text, required: false)],
            values: { entity in
                let person = entity as! Person
                return ["firstName": .text(person.firstName)].merging(
                    optional(["lastName": person.lastName.map(ExportValue.text),
                              "emailAddress": person.emailAddress.map(ExportValue.text)])) { $1 }
            },
            make: { row in
                Person(recordName: row.recordName, firstName: row.text("firstName") ?? "", lastName: row.text("lastName"),
                       emailAddress: row.text("emailAddress"), modificationDate: row.modificationDate)
            }),
        ExportKind(
            recordType: Game.recordType, section: "games",
            fields: [.init(name: "name", kind: .name, required: true), .init(name: "lowScoreWins", kind: .flag, required: true)],
            values: { entity in
                let game = entity as! Game
                return ["name": .text(game.name), "lowScoreWins": .flag(game.lowScoreWins)]
            },
            make: { row in
                Game(recordName: row.recordName, name: row.text("name") ?? "", lowScoreWins: row.flag("lowScoreWins") ?? false,
                     modificationDate: row.modificationDate)
            }),
        ExportKind(
            recordType: Match.recordType, section: "matches",
            fields: [.init(name: "game", kind: .reference(Game.recordType), required: true),
                     .init(name: "startDate", kind: .date, required: true), .init(name: "endDate", kind: .date, required: false),
                     .init(name: "notes", kind: .text, required: false)],
            values: { entity in
                let match = entity as! Match
                return ["game": .reference(match.game), "startDate": .date(match.startDate)].merging(
                    optional(["endDate": match.endDate.map(ExportValue.date), "notes": match.notes.map(ExportValue.text)])) { $1 }
            },
            make: { row in
                Match(recordName: row.recordName, game: row.reference("game") ?? "", startDate: row.date("startDate") ?? row.modificationDate,
                      endDate: row.date("endDate"), notes: row.text("notes"), modificationDate: row.modificationDate)
            }),
        ExportKind(
            recordType: Player.recordType, section: "players",
            fields: [.init(name: "match", kind: .reference(Match.recordType), required: true),
                     .init(name: "person", kind: .reference(Person.recordType), required: true),
                     .init(name: "seat", kind: .integer, required: true)],
            values: { entity in
                let player = entity as! Player
                return ["match": .reference(player.match), "person": .reference(player.person), "seat": .integer(player.seat)]
            },
            make: { row in
                Player(recordName: row.recordName, match: row.reference("match") ?? "", person: row.reference("person") ?? "",
                       seat: row.integer("seat") ?? 0, modificationDate: row.modificationDate)
            }),
        ExportKind(
            recordType: Score.recordType, section: "scores",
            fields: [.init(name: "player", kind: .reference(Player.recordType), required: true),
                     .init(name: "value", kind: .number, required: true), .init(name: "round", kind: .integer, required: false)],
            values: { entity in
                let score = entity as! Score
                return ["player": .reference(score.player), "value": .number(score.value)].merging(
                    optional(["round": score.round.map(ExportValue.integer)])) { $1 }
            },
            make: { row in
                Score(recordName: row.recordName, player: row.reference("player") ?? "", value: row.number("value") ?? 0,
                      round: row.integer("round"), modificationDate: row.modificationDate)
            }),
        ExportKind(
            recordType: MatchLocation.recordType, section: "matchLocations",
            fields: [.init(name: "match", kind: .reference(Match.recordType), required: true),
                     .init(name: "name", kind: .text, required: false), .init(name: "location", kind: .location, required: false)],
            values: { entity in
                let place = entity as! MatchLocation
                var location: ExportValue?
                if let latitude = place.latitude, let longitude = place.longitude {
                    location = .location(latitude: latitude, longitude: longitude)
                }
                return ["match": .reference(place.match)].merging(optional(["name": place.name.map(ExportValue.text), "location": location])) { $1 }
            },
            make: { row in
                var latitude: Double?
                var longitude: Double?
                if case .location(let y, let x)? = row.values["location"] { (latitude, longitude) = (y, x) }
                return MatchLocation(recordName: row.recordName, match: row.reference("match") ?? "", name: row.text("name"),
                                     latitude: latitude, longitude: longitude, modificationDate: row.modificationDate)
            }),
    ]

    private static func optional(_ values: [String: ExportValue?]) -> [String: ExportValue] { values.compactMapValues { $0 } }

    func entityTypeMatches(_ entity: any CloudKitCompatible) -> Bool { type(of: entity).recordType == recordType }
}

extension ExportRow {
    func text(_ name: String) -> String? { if case .text(let text)? = values[name] { text } else { nil } }
    func reference(_ name: String) -> String? { if case .reference(let target)? = values[name] { target } else { nil } }
    func integer(_ name: String) -> Int64? { if case .integer(let value)? = values[name] { value } else { nil } }
    func number(_ name: String) -> Double? { if case .number(let value)? = values[name] { value } else { nil } }
    func flag(_ name: String) -> Bool? { if case .flag(let value)? = values[name] { value } else { nil } }
    func date(_ name: String) -> Date? { if case .date(let value)? = values[name] { value } else { nil } }
}

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
    /// The whole book, for `export`.
    public func export() throws -> BookExport {
        var rows: [ExportRow] = []
        for kind in ExportKind.all {
            guard let type = Self.entityType(named: kind.recordType) else { continue }
            let entities = try store.records(ofType: kind.recordType).compactMap { try? type.init(record: $0) }
            for entity in entities.sorted(by: { $0.recordName < $1.recordName }) {
                rows.append(ExportRow(recordType: kind.recordType, recordName: entity.recordName,
                                      modificationDate: entity.modificationDate, values: kind.values(entity)))
            }
        }
        return BookExport(rows: rows)
    }

    /// The book written in `format`.
    public func exportText(format: ExportFormat) throws -> String {
        let book = try export()
        switch format {
        case .json: return book.jsonText
        case .csv: return book.csvText
        }
    }

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
