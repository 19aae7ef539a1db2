import RecordModel

/// JSON text for output: compact, one line, object keys sorted so the same data always
/// prints the same. Strings escape every control character — C0 as JSON requires, and DEL and
/// C1 too (`\u007f`, `\u009b`), which JSON allows raw but a terminal would act on — so JSON
/// printed to a terminal cannot carry an escape sequence from another machine's data.
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
                writeString(key, to: &out)
                out += ":"
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
        case .string(let text):
            writeString(text, to: &out)
        default:
            out += value.serializedString()
        }
    }

    /// The standard JSON string of `text`, then each DEL or C1 scalar (left raw by it) written
    /// as `\u00XX`.
    private static func writeString(_ text: String, to out: inout String) {
        let standard = JSONValue.string(text).serializedString()
        guard standard.unicodeScalars.contains(where: isDELOrC1) else {
            out += standard
            return
        }
        var escaped = String.UnicodeScalarView()
        for scalar in standard.unicodeScalars {
            if isDELOrC1(scalar) {
                escaped.append(contentsOf: "\\u00\(String(scalar.value, radix: 16))".unicodeScalars)
            } else {
                escaped.append(scalar)
            }
        }
        out += String(escaped)
    }

    private static func isDELOrC1(_ scalar: Unicode.Scalar) -> Bool { (0x7F...0x9F).contains(scalar.value) }
}
