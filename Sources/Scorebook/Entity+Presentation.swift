import Foundation
import RecordSync
import ScorebookKit

// How the CLI shows and names the domain's entities: display names, the names a REF may use,
// and the fields of `--json`. The domain types (ScorebookKit) carry only what the sync needs.

extension Person: CloudKitCompatible {
    public var displayName: String { fullName }
    public var referenceNames: [String] { [firstName, fullName] }

    public var jsonFields: [String: JSONValue] {
        ["firstName": .string(firstName), "lastName": lastName.map(JSONValue.string) ?? .null,
         "emailAddress": emailAddress.map(JSONValue.string) ?? .null, "avatar": avatarPicture?.json ?? .null]
    }
}

extension Game: CloudKitCompatible {
    public var displayName: String { name }
    public var referenceNames: [String] { [name] }
    public var jsonFields: [String: JSONValue] { ["name": .string(name), "lowScoreWins": .bool(lowScoreWins)] }
}

extension Match: CloudKitCompatible {
    public var displayName: String { "match of \(LocalTime.string(from: startDate))" }

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

extension Player: CloudKitCompatible {
    public var displayName: String { "seat \(seat)" }
    public var jsonFields: [String: JSONValue] { ["match": .string(match), "person": .string(person), "seat": .int(seat)] }
}

extension Score: CloudKitCompatible {
    public var displayName: String { round.map { "\(NumberText.format(value)) in round \($0)" } ?? NumberText.format(value) }

    public var jsonFields: [String: JSONValue] {
        ["player": .string(player), "value": .double(value), "round": round.map(JSONValue.int) ?? .null]
    }
}

extension MatchImage: CloudKitCompatible {
    public var displayName: String { "photo \(recordName.split(separator: "|").last.map(String.init)?.prefix(8) ?? "")" }
    public var jsonFields: [String: JSONValue] { ["match": .string(match), "image": picture?.json ?? .null] }
}

extension PictureReference {
    /// How `--json` shows a picture: its SHA-256 (hex) and size.
    public var json: JSONValue { ["sha256": .string(checksum), "size": .int(size)] }
}

extension MatchLocation: CloudKitCompatible {
    public var displayName: String { name ?? "location" }

    /// The schema's fields: `location` is one LOCATION, `{"latitude", "longitude"}`,
    /// or null when unknown.
    public var jsonFields: [String: JSONValue] {
        var location = JSONValue.null
        if let latitude, let longitude { location = ["latitude": .double(latitude), "longitude": .double(longitude)] }
        return ["match": .string(match), "name": name.map(JSONValue.string) ?? .null, "location": location]
    }

    /// `"location"` of `match show --json`: `{"recordName", "name", "latitude", "longitude"}`.
    public var showJSON: JSONValue {
        ["recordName": .string(recordName), "name": name.map(JSONValue.string) ?? .null,
         "latitude": latitude.map(JSONValue.double) ?? .null, "longitude": longitude.map(JSONValue.double) ?? .null]
    }

    /// `Kitchen table (52.52, 13.405)` for `match show`.
    public var showText: String {
        let place = name ?? "unnamed place"
        guard let latitude, let longitude else { return place }
        return "\(place) (\(latitude), \(longitude))"
    }
}
