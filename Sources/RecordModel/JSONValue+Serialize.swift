extension JSONValue {
    /// An array of many large elements written straight into one buffer reserved up front:
    /// answers carry hundreds of records, and a byte array per element, copied again into the
    /// answer, costs as much as reading them.
    /// With `key`, the array is written as the only member of an object, `{"key":[...]}`: a whole
    /// answer made in one buffer, which `serialized()` then hands on without copying it again.
    @inlinable
    public static func rawArray<Element>(_ elements: [Element], under key: StaticString? = nil, estimatedBytes: (Element) -> Int,
                                         write: (Element, inout [UInt8]) -> Void) -> JSONValue
    {
        var out: [UInt8] = []
        out.reserveCapacity(elements.reduce(2 + (key.map { $0.utf8CodeUnitCount + 5 } ?? 0)) { $0 + estimatedBytes($1) + 1 })
        if let key {
            out.append(contentsOf: [UInt8(ascii: "{"), UInt8(ascii: "\"")])
            key.withUTF8Buffer { out.append(contentsOf: $0) }
            out.append(contentsOf: [UInt8(ascii: "\""), UInt8(ascii: ":")])
        }
        out.append(UInt8(ascii: "["))
        for (index, element) in elements.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            write(element, &out)
        }
        out.append(UInt8(ascii: "]"))
        if key != nil { out.append(UInt8(ascii: "}")) }
        return .raw(out)
    }

    /// Compact JSON text as UTF-8 bytes. Bytes already written (`.raw`) are returned as they are,
    /// not copied: a batch's answer is a few hundred kilobytes.
    public func serialized() -> [UInt8] {
        if case .raw(let bytes) = self { return bytes }
        var out: [UInt8] = []
        out.reserveCapacity(256)
        serialize(into: &out)
        return out
    }

    public func serializedString() -> String {
        String(decoding: serialized(), as: UTF8.self)
    }

    public func serialize(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): JSONValue.appendInteger(i, to: &out)
        case .double(let d): JSONValue.appendDouble(d, to: &out)
        case .string(let s): JSONValue.appendString(s, to: &out)
        case .raw(let bytes): out.append(contentsOf: bytes)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (offset, element) in elements.enumerated() {
                if offset > 0 { out.append(UInt8(ascii: ",")) }
                element.serialize(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            var first = true
            for (key, value) in members {
                if !first { out.append(UInt8(ascii: ",")) }
                first = false
                appendString(key, to: &out)
                out.append(UInt8(ascii: ":"))
                value.serialize(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    private func appendString(_ string: String, to out: inout [UInt8]) { JSONValue.appendString(string, to: &out) }

    static func appendDouble(_ value: Double, to out: inout [UInt8]) {
        guard value.isFinite else { out.append(contentsOf: "null".utf8); return }
        if value.rounded() == value, abs(value) < 1e15 {
            // Keep a fraction so the value reads back as a double, not an integer.
            out.append(contentsOf: String(Int64(value)).utf8)
            out.append(contentsOf: ".0".utf8)
        } else {
            out.append(contentsOf: value.description.utf8)
        }
    }

    static let hexDigits: [UInt8] = Array("0123456789abcdef".utf8)

    /// An integer's decimal digits, without making a `String` (every record's two timestamps and
    /// every INT64 field of every answer).
    public static func appendInteger(_ value: Int64, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 20) { digits in
            var end = 0
            writeDigits(value.magnitude, radix: 10, into: digits, at: &end)
            out.append(contentsOf: UnsafeBufferPointer(rebasing: digits[..<end]))
        }
    }

    /// Writes `value`'s digits in `radix` (2 to 36, lower-case letters) into `buffer` from `end`,
    /// advancing `end`; the buffer needs room for them (64 for any radix, 20 in base 10).
    public static func writeDigits(_ value: UInt64, radix: UInt64, into buffer: UnsafeMutableBufferPointer<UInt8>, at end: inout Int) {
        var value = value
        let start = end
        repeat {
            buffer[end] = digitCharacters[Int(value % radix)]
            value /= radix
            end += 1
        } while value > 0
        buffer[start..<end].reverse()
    }

    private static let digitCharacters = Array("0123456789abcdefghijklmnopqrstuvwxyz".utf8)

    public static func appendString(_ string: String, to out: inout [UInt8]) {
        var string = string
        string.withUTF8 { appendString(utf8: UnsafeRawBufferPointer($0), to: &out) }
    }

    /// A string given as its UTF-8 bytes, quoted and escaped (a store's column read in place).
    public static func appendString(utf8 bytes: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        let clean = escapeFreePrefixCount(bytes)
        if clean == bytes.count {
            // Almost every name, tag and user: nothing to escape, one copy.
            out.append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
        } else {
            let utf8 = bytes.assumingMemoryBound(to: UInt8.self)
            var runStart = 0
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 6) { escape in
                for index in clean..<utf8.count {
                    let length = writeEscape(of: utf8[index], to: escape.baseAddress!)
                    guard length > 0 else { continue }
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<index]))
                    out.append(contentsOf: UnsafeBufferPointer(rebasing: escape[..<length]))
                    runStart = index + 1
                }
            }
            out.append(contentsOf: UnsafeBufferPointer(rebasing: utf8[runStart..<utf8.count]))
        }
        out.append(UInt8(ascii: "\""))
    }

    /// Writes `byte`'s escape sequence in a JSON string (at most 6 bytes) and returns its length;
    /// 0 for a byte written as it is.
    @inline(__always)
    static func writeEscape(of byte: UInt8, to out: UnsafeMutablePointer<UInt8>) -> Int {
        switch byte {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"):
            out[0] = 0x5C; out[1] = byte
            return 2
        case 0x0A: out[0] = 0x5C; out[1] = UInt8(ascii: "n"); return 2
        case 0x0D: out[0] = 0x5C; out[1] = UInt8(ascii: "r"); return 2
        case 0x09: out[0] = 0x5C; out[1] = UInt8(ascii: "t"); return 2
        case 0..<0x20:
            out[0] = 0x5C; out[1] = UInt8(ascii: "u"); out[2] = 0x30; out[3] = 0x30
            out[4] = hexDigits[Int(byte >> 4)]; out[5] = hexDigits[Int(byte & 0xF)]
            return 6
        default:
            return 0
        }
    }

    /// How many leading bytes need no escaping in a JSON string (`"`, `\\` and control bytes
    /// do), looked at eight at a time: the per-byte test was the largest part of writing a
    /// feed page's strings.
    static func escapeFreePrefixCount(_ bytes: UnsafeRawBufferPointer) -> Int {
        let ones: UInt64 = 0x0101_0101_0101_0101, highBits: UInt64 = 0x8080_8080_8080_8080
        var index = 0
        while index + 8 <= bytes.count {
            let word = bytes.loadUnaligned(fromByteOffset: index, as: UInt64.self)
            // A byte below 0x20, or equal to `"` or `\\` (equal: the XOR is a zero byte), sets
            // its high bit; bytes of 0x80 and above never do.
            let control = (word &- ones &* 0x20) & ~word
            let quote = word ^ (ones &* 0x22), backslash = word ^ (ones &* 0x5C)
            let flagged = (control | ((quote &- ones) & ~quote) | ((backslash &- ones) & ~backslash)) & highBits
            if flagged != 0 { break }
            index += 8
        }
        while index < bytes.count {
            let byte = bytes[index]
            if byte < 0x20 || byte == UInt8(ascii: "\"") || byte == UInt8(ascii: "\\") { return index }
            index += 1
        }
        return index
    }
}

extension Array where Element == UInt8 {
    /// Appends a literal's bytes with one copy. (`append(contentsOf: "…".utf8)` goes through the
    /// string's UTF-8 view, which showed in the write path's profile: a record's answer is a
    /// dozen such keys.)
    @inlinable
    public mutating func appendLiteral(_ literal: StaticString) {
        literal.withUTF8Buffer { append(contentsOf: $0) }
    }
}
