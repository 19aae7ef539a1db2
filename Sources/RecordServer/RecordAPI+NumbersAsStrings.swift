import RecordModel

/// `numbersAsStrings: true`, as CloudKit answers it: INT64 and DOUBLE field values (and their
/// lists) come back as strings, for JavaScript clients that would lose a 64-bit integer's digits.
extension RecordAPI {
    static let numberFieldTypes: Set<String> = ["INT64", "DOUBLE", "INT64_LIST", "DOUBLE_LIST"]
    private static let numbersAsStringsKey = Array(#""numbersAsStrings""#.utf8)

    /// Whether the request asks for it. A body read into record drafts (`records/modify`) is not
    /// parsed as a whole, so its bytes are looked at first and parsed only when they name the key.
    static func asksNumbersAsStrings(_ body: JSONValue, bodyBytes: [UInt8], readsRecordDrafts: Bool) -> Bool {
        if !readsRecordDrafts { return body["numbersAsStrings"]?.boolValue == true }
        let named = bodyBytes.withUnsafeBufferPointer { ByteSearch.offset(past: numbersAsStringsKey, in: $0, from: 0) != nil }
        guard named else { return false }
        return (try? JSONValue.parse(bodyBytes))?["numbersAsStrings"]?.boolValue == true
    }

    /// `answer` with every number field's value written as a string.
    static func numbersAsStrings(_ answer: JSONValue) throws -> JSONValue {
        func convert(_ value: JSONValue) -> JSONValue {
            switch value {
            case .int(let number): return .string(String(number))
            case .double(let number): return .string(number == number.rounded() && abs(number) < 1e15 ? String(Int64(number)) : String(number))
            case .array(let items): return .array(items.map(convert))
            default: return value
            }
        }
        func walk(_ value: JSONValue) -> JSONValue {
            switch value {
            case .array(let items): return .array(items.map(walk))
            case .object(var members):
                if let type = members["type"]?.stringValue, numberFieldTypes.contains(type), let number = members["value"] {
                    members["value"] = convert(number)
                    return .object(members)
                }
                return .object(members.mapValues(walk))
            default: return value
            }
        }
        // Records are often answered as pre-serialized bytes: read them back as values first.
        return walk(try JSONValue.parse(answer.serialized()))
    }
}
