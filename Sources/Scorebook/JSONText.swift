import RecordModel

/// JSON text for output: compact, one line, object keys sorted so the same data always
/// prints the same.
enum JSONText {
    static func render(_ value: JSONValue) -> String {
        var out = ""
        write(value, to: &out)
        return out
    }

    private static func write(_ value: JSONValue, to out: inout String) {
        switch value {
        case .object(let members):
            out += "{"
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out += "," }
                out += JSONValue.string(key).serializedString() + ":"
                write(members[key]!, to: &out)
            }
            out += "}"
        case .array(let elements):
            out += "["
            for (index, element) in elements.enumerated() {
                if index > 0 { out += "," }
                write(element, to: &out)
            }
            out += "]"
        default:
            out += value.serializedString()
        }
    }
}
