/// Writes JSON into room an array reserved for it beforehand (`Array.appendReserved`): a feed
/// page's record is some twenty-five pieces, and each `append` checks the array's uniqueness and
/// capacity, which cost more than copying the bytes.
public struct ReservedBytes {
    @usableFromInline var next: UnsafeMutablePointer<UInt8>

    @usableFromInline init(next: UnsafeMutablePointer<UInt8>) { self.next = next }

    /// The most bytes `string(utf8:)` writes for a string of `count` bytes (each a `\u00XX`).
    @inlinable
    public static func stringBound(_ count: Int) -> Int { count * 6 + 2 }

    @inlinable
    public mutating func byte(_ byte: UInt8) {
        next.pointee = byte
        next += 1
    }

    @inlinable
    public mutating func literal(_ literal: StaticString) {
        next.update(from: literal.utf8Start, count: literal.utf8CodeUnitCount)
        next += literal.utf8CodeUnitCount
    }

    @inlinable
    public mutating func bytes(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return }
        UnsafeMutableRawPointer(next).copyMemory(from: base, byteCount: bytes.count)
        next += bytes.count
    }

    public mutating func bytes(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { self.bytes($0) }
    }

    /// A string given as its UTF-8 bytes, quoted and escaped as `JSONValue.appendString` does.
    public mutating func string(utf8 bytes: UnsafeRawBufferPointer) {
        byte(UInt8(ascii: "\""))
        let clean = JSONValue.escapeFreePrefixCount(bytes)
        self.bytes(UnsafeRawBufferPointer(rebasing: bytes[0..<clean]))
        for index in clean..<bytes.count {
            let length = JSONValue.writeEscape(of: bytes[index], to: next)
            if length > 0 { next += length } else { byte(bytes[index]) }
        }
        byte(UInt8(ascii: "\""))
    }

    /// The most bytes `integer(_:)` writes.
    public static let integerBound = 20

    /// An integer's decimal digits.
    public mutating func integer(_ value: Int64) {
        if value < 0 { byte(UInt8(ascii: "-")) }
        var end = 0
        JSONValue.writeDigits(value.magnitude, radix: 10, into: UnsafeMutableBufferPointer(start: next, count: 20), at: &end)
        next += end
    }
}

extension Array where Element == UInt8 {
    /// Appends what `body` writes, at most `maximum` bytes, with one capacity check (growing the
    /// array geometrically, as `append` does).
    public mutating func appendReserved(atMost maximum: Int, _ body: (inout ReservedBytes) -> Void) {
        let start = count
        if capacity - start < maximum { reserveCapacity(Swift.max(start + maximum, capacity * 2)) }
        // The room is zeroed before it is written (an array's elements are always initialized):
        // copied from zeros, which is a `memcpy`, where appending repeated zeros went byte by byte.
        if maximum <= reservedZeros.count {
            reservedZeros.withUnsafeBytes { append(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0..<maximum])) }
        } else {
            append(contentsOf: repeatElement(0, count: maximum))
        }
        let written = withUnsafeMutableBufferPointer { buffer -> Int in
            let base = buffer.baseAddress! + start
            var writer = ReservedBytes(next: base)
            body(&writer)
            return writer.next - base
        }
        precondition(written <= maximum, "wrote \(written) bytes into room for \(maximum)")
        removeLast(maximum - written)
    }
}

/// Zeros to initialize reserved room from (`appendReserved`): a record's room is under a few KB.
private let reservedZeros = [UInt8](repeating: 0, count: 1 << 16)
