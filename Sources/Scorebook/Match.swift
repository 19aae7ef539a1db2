import Foundation
import RecordModel
import SyncEngine

/// One playing of a game. Deleting its game deletes it.
public struct Match: CloudKitCompatible, Equatable {
    public static let recordType = "Match"
    public static let fieldNames = ["game", "startDate", "endDate", "notes", "modificationDate"]

    public let recordName: String
    public var modificationDate: Date
    /// The Game's record name.
    public var game: String
    public var startDate: Date
    /// Set when the match is finished.
    public var endDate: Date?
    public var notes: String?

    public init(recordName: String = Match.newRecordName(), game: String, startDate: Date, endDate: Date? = nil,
                notes: String? = nil, modificationDate: Date = Date())
    {
        self.recordName = recordName
        self.game = game
        self.startDate = startDate
        self.endDate = endDate
        self.notes = notes
        self.modificationDate = modificationDate
    }

    public init(record: Record) throws {
        let reader = try RecordReader(record, as: Match.self)
        recordName = record.recordName
        game = try reader.reference("game")
        startDate = reader.date("startDate") ?? reader.modificationDate
        endDate = reader.date("endDate")
        notes = reader.string("notes")
        modificationDate = reader.modificationDate
    }

    public func record(in zone: ZoneID) -> Record {
        baseRecord(in: zone, fields: [
            "game": .owner(game), "startDate": .date(startDate), "endDate": endDate.map(FieldValue.date),
            "notes": notes.map(FieldValue.string),
        ])
    }

    public var isFinished: Bool { endDate != nil }
    public var displayName: String { "match of \(ISO8601.string(from: startDate))" }

    public var jsonFields: [String: JSONValue] {
        ["game": .string(game), "startDate": .string(ISO8601.string(from: startDate)),
         "endDate": endDate.map { .string(ISO8601.string(from: $0)) } ?? .null,
         "notes": notes.map(JSONValue.string) ?? .null]
    }
}

extension Match {
    /// The date of `match start --date`: ISO-8601 with a time zone (`2026-11-20T19:30:00Z`,
    /// `2026-11-20T19:30:00+01:00`, fractional seconds allowed), or a local date and time without
    /// one (`2026-11-20T19:30`, `2026-11-20`, midnight), read in the local time zone.
    public static func date(fromArgument text: String) throws -> Date {
        let trimmed = text.trimmingCharacters(in: .whitespaces)
        // Milliseconds, as records carry them.
        func rounded(_ date: Date) -> Date { Date(timeIntervalSince1970: (date.timeIntervalSince1970 * 1000).rounded() / 1000) }
        if let date = ISO8601.date(from: trimmed) { return rounded(date) }
        for pattern in ["yyyy-MM-dd'T'HH:mm:ss.SSS", "yyyy-MM-dd'T'HH:mm:ss", "yyyy-MM-dd'T'HH:mm", "yyyy-MM-dd"] {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_US_POSIX")
            formatter.calendar = Calendar(identifier: .gregorian)
            formatter.timeZone = TimeZone.current
            formatter.dateFormat = pattern
            if let date = formatter.date(from: trimmed) { return rounded(date) }
        }
        throw ScorebookError(.invalidInput, "--date \"\(text)\" is not an ISO-8601 date; write it like 2026-11-20T19:30:00Z")
    }
}
