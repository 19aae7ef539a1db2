/// The naming rules of containers, zones and records.
public enum Names {
    public static func isValidName(_ name: String) -> Bool {
        var name = name
        // The contiguous bytes, not the UTF-8 view: every record of every batch passes here.
        return name.withUTF8 { bytes in
            (1...255).contains(bytes.count) && bytes.allSatisfy { $0 >= 0x20 && $0 <= 0x7E }
        }
    }

    public static func validateRecordName(_ name: String) throws {
        guard isValidName(name) else {
            throw ServerError.badRequest("recordName must be 1-255 printable ASCII characters")
        }
        guard !name.hasPrefix("_") else { throw ServerError.badRequest("recordName must not start with '_'") }
    }

    public static func validateZoneName(_ name: String) throws {
        guard isValidName(name) else { throw ServerError.badRequest("zoneName must be 1-255 printable ASCII characters") }
        guard !name.hasPrefix("_") || name == ZoneID.defaultZoneName else {
            throw ServerError.badRequest("zoneName must not start with '_' (except _defaultZone)")
        }
    }

    /// Record types and field names: an identifier of letters, digits and `_`, starting with a letter.
    public static func validateIdentifier(_ name: String, what: String) throws {
        var name = name
        let valid = name.withUTF8 { bytes in
            (1...255).contains(bytes.count) && bytes[0].isASCIILetter
                && bytes.allSatisfy { $0.isASCIILetter || ($0 >= 0x30 && $0 <= 0x39) || $0 == UInt8(ascii: "_") }
        }
        guard valid else {
            throw ServerError.badRequest("\(what) must be 1-255 letters, digits or '_', starting with a letter")
        }
    }
}

extension UInt8 {
    var isASCIILetter: Bool { (self >= 0x41 && self <= 0x5A) || (self >= 0x61 && self <= 0x7A) }
}

/// A zone ID as a request names it, its name held to the rules above.
extension ZoneID {
    public init(json: JSONValue) throws {
        guard case .object = json else { throw ServerError.badRequest("zoneID must be an object") }
        guard let name = json["zoneName"]?.stringValue else { throw ServerError.badRequest("zoneID.zoneName must be a string") }
        try Names.validateZoneName(name)
        self.zoneName = name
        self.ownerRecordName = json["ownerRecordName"]?.stringValue
    }

    /// Reads the optional `zoneID` member of a request; an absent one means `_defaultZone`.
    public static func fromRequest(_ json: JSONValue?) throws -> ZoneID {
        guard let json, !json.isNull else { return .default }
        return try ZoneID(json: json)
    }
}
