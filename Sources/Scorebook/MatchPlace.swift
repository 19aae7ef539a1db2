import Foundation

/// Where a match is played, as given to `match start --location NAME [--latitude X --longitude Y]`.
public struct MatchPlace: Equatable, Sendable {
    public var name: String
    public var latitude: Double?
    public var longitude: Double?

    public init(name: String, latitude: Double? = nil, longitude: Double? = nil) {
        self.name = name
        self.latitude = latitude
        self.longitude = longitude
    }

    /// The place with its name trimmed; refuses a bad name, and coordinates that are not a
    /// pair or out of range.
    func validated() throws -> MatchPlace {
        var place = self
        place.name = try NameValidation.validated(name, field: "a location name")
        switch (latitude, longitude) {
        case (nil, nil):
            break
        case (let latitude?, let longitude?):
            guard latitude.isFinite, (-90...90).contains(latitude) else {
                throw ScorebookError(.invalidInput, "--latitude must be between -90 and 90, not \(NumberText.format(latitude))")
            }
            guard longitude.isFinite, (-180...180).contains(longitude) else {
                throw ScorebookError(.invalidInput, "--longitude must be between -180 and 180, not \(NumberText.format(longitude))")
            }
        default:
            throw ScorebookError(.invalidInput, "--latitude and --longitude go together: give both or neither")
        }
        return place
    }

    /// A name of 1–200 characters without control characters, trimmed.
    /// Match notes: free text of at most 10,000 characters, line breaks and tabs allowed, no
    /// other control characters; blank notes are none.
    static func validNotes(_ text: String) throws -> String? {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else { return nil }
        guard trimmed.count <= 10_000 else { throw ScorebookError(.invalidInput, "notes are longer than 10,000 characters") }
        let allowed: Set<Unicode.Scalar> = ["\n", "\t", "\r"]
        guard !trimmed.unicodeScalars.contains(where: { $0.properties.generalCategory == .control && !allowed.contains($0) }) else {
            throw ScorebookError(.invalidInput, "notes cannot contain control characters other than line breaks and tabs")
        }
        return trimmed
    }
}
