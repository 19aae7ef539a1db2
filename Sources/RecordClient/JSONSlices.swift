/// Finds where values lie in a JSON text without building them: a fetched record's dictionary
/// can then be stored as the server wrote it instead of being serialized again. Only texts that
/// `JSONValue.parse` already accepted are scanned; a shape that does not fit answers nil.
public struct JSONSlices {
    let bytes: UnsafeBufferPointer<UInt8>

    public init(_ bytes: UnsafeBufferPointer<UInt8>) { self.bytes = bytes }

    /// The range of the value of the member `key` of the object whose `{` is at `start`.
    public func member(_ key: StaticString, ofObjectAt start: Int) -> Range<Int>? {
        guard let valueStart = memberStart(key, ofObjectAt: start), let end = endOfValue(at: valueStart) else { return nil }
        return valueStart..<end
    }

    /// Where the value of the member `key` starts, in the object whose `{` is at `start`; the
    /// members after it are not read.
    public func memberStart(_ key: StaticString, ofObjectAt start: Int) -> Int? {
        guard start < bytes.count, bytes[start] == UInt8(ascii: "{") else { return nil }
        var index = skipWhitespace(from: start + 1)
        while index < bytes.count, bytes[index] == UInt8(ascii: "\"") {
            guard let keyEnd = endOfString(at: index) else { return nil }
            let isKey = equals(index..<keyEnd, key)
            index = skipWhitespace(from: keyEnd)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ":") else { return nil }
            let valueStart = skipWhitespace(from: index + 1)
            if isKey { return valueStart }
            guard let valueEnd = endOfValue(at: valueStart) else { return nil }
            index = skipWhitespace(from: valueEnd)
            guard index < bytes.count, bytes[index] == UInt8(ascii: ",") else { return nil }
            index = skipWhitespace(from: index + 1)
        }
        return nil
    }

    /// The ranges of the elements of the array whose `[` is at `start`.
    public func elements(ofArrayAt start: Int) -> [Range<Int>]? {
        guard start < bytes.count, bytes[start] == UInt8(ascii: "[") else { return nil }
        var ranges: [Range<Int>] = []
        var index = skipWhitespace(from: start + 1)
        if index < bytes.count, bytes[index] == UInt8(ascii: "]") { return ranges }
        while index < bytes.count {
            guard let end = endOfValue(at: index) else { return nil }
            ranges.append(index..<end)
            index = skipWhitespace(from: end)
            guard index < bytes.count else { return nil }
            if bytes[index] == UInt8(ascii: "]") { return ranges }
            guard bytes[index] == UInt8(ascii: ",") else { return nil }
            index = skipWhitespace(from: index + 1)
        }
        return nil
    }

    /// Where the first element of the array whose `[` is at `start` begins (the index of the
    /// `]` when it is empty).
    public func firstElementStart(ofArrayAt start: Int) -> Int {
        skipWhitespace(from: start + 1)
    }

    /// Where the value of the member `key` of the first entry of `zones` starts, in an answer
    /// `{"zones": [{…}, …]}`.
    public func firstZoneMemberStart(_ key: StaticString) -> Int? {
        let start = skipWhitespace(from: 0)
        guard let zones = memberStart("zones", ofObjectAt: start), zones < bytes.count, bytes[zones] == UInt8(ascii: "[") else { return nil }
        return memberStart(key, ofObjectAt: firstElementStart(ofArrayAt: zones))
    }

    /// Whether the value at `start` is `true`.
    public func isTrue(at start: Int) -> Bool {
        start + 4 <= bytes.count && bytes[start] == UInt8(ascii: "t") && bytes[start + 1] == UInt8(ascii: "r")
            && bytes[start + 2] == UInt8(ascii: "u") && bytes[start + 3] == UInt8(ascii: "e")
    }

    /// The string at `start` when it holds no escape, else nil.
    public func plainString(at start: Int) -> String? {
        guard start < bytes.count, bytes[start] == UInt8(ascii: "\""), let end = endOfString(at: start) else { return nil }
        let inside = UnsafeBufferPointer(rebasing: bytes[(start + 1)..<(end - 1)])
        guard !inside.contains(UInt8(ascii: "\\")) else { return nil }
        return String(decoding: inside, as: UTF8.self)
    }

    private func equals(_ key: Range<Int>, _ name: StaticString) -> Bool {
        // `key` spans the quotes.
        guard key.count == name.utf8CodeUnitCount + 2 else { return false }
        let start = name.utf8Start
        for offset in 0..<name.utf8CodeUnitCount where bytes[key.lowerBound + 1 + offset] != start[offset] { return false }
        return true
    }

    private static func isWhitespace(_ byte: UInt8) -> Bool {
        byte == 0x20 || byte == 0x0A || byte == 0x0D || byte == 0x09
    }

    private func skipWhitespace(from start: Int) -> Int {
        var index = start
        while index < bytes.count, Self.isWhitespace(bytes[index]) { index += 1 }
        return index
    }

    /// The index after the string whose opening quote is at `start`.
    private func endOfString(at start: Int) -> Int? {
        var index = start + 1
        while index < bytes.count {
            switch bytes[index] {
            case UInt8(ascii: "\\"): index += 2
            case UInt8(ascii: "\""): return index + 1
            default: index += 1
            }
        }
        return nil
    }

    /// The index after the value that starts at `start`.
    private func endOfValue(at start: Int) -> Int? {
        guard start < bytes.count else { return nil }
        switch bytes[start] {
        case UInt8(ascii: "\""):
            return endOfString(at: start)
        case UInt8(ascii: "{"), UInt8(ascii: "["):
            // Strings may hold brackets; everything else nests.
            var depth = 0
            var index = start
            while index < bytes.count {
                switch bytes[index] {
                case UInt8(ascii: "\""):
                    guard let end = endOfString(at: index) else { return nil }
                    index = end
                    continue
                case UInt8(ascii: "{"), UInt8(ascii: "["): depth += 1
                case UInt8(ascii: "}"), UInt8(ascii: "]"):
                    depth -= 1
                    if depth == 0 { return index + 1 }
                default: break
                }
                index += 1
            }
            return nil
        default:
            // A number or a literal: up to the next delimiter.
            var index = start
            while index < bytes.count, !Self.isWhitespace(bytes[index]),
                  bytes[index] != UInt8(ascii: ","), bytes[index] != UInt8(ascii: "}"), bytes[index] != UInt8(ascii: "]")
            {
                index += 1
            }
            return index
        }
    }
}
