#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Numbers as people write them: `42`, not `42.0`, and `0.3` for 0.1 + 0.2, not
/// `0.30000000000000004`.
public enum NumberText {
    /// Significant digits kept. A double holds 15 to 17; the last few are where sums and
    /// averages of decimal scores collect their binary noise (ten 0.1s add up to
    /// 0.9999999999999999, a thousand to 99.9999999999986), and 12 leaves room for that while
    /// keeping every figure a scorebook holds.
    public static let significantDigits = 12

    /// The double nearest to `value` written with `significantDigits` digits. Its shortest
    /// round-tripping form (Swift's `description`, and so the JSON number) is then the decimal a
    /// person would write.
    public static func rounded(_ value: Double) -> Double {
        guard value.isFinite, value != 0 else { return value }
        var buffer = [CChar](repeating: 0, count: 48)
        let written = withVaList([value]) { vsnprintf(&buffer, buffer.count, "%.\(significantDigits)g", $0) }
        guard written > 0, written < buffer.count else { return value }
        return Double(String(decoding: buffer[..<Int(written)].map { UInt8(bitPattern: $0) }, as: UTF8.self)) ?? value
    }

    /// `value` rounded as above, as text: integral values without a fraction, others in their
    /// shortest form (`2.5`, `0.3`, `1e-07`).
    public static func format(_ value: Double) -> String {
        let value = rounded(value)
        if value.rounded() == value, abs(value) < 1e15 { return String(Int64(value)) }
        return String(value)
    }
}
