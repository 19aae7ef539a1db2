import Synchronization

/// UUID-shaped ids (version 4, lowercase) for requests and notifications, made without a system
/// call: Foundation's `UUID()` opens, reads and closes `/dev/urandom` for each one here, which
/// cost a request about as much as routing it. Random across processes (two seeds from the
/// system's generator, taken once); within one, a counter through a bijective mix, so no two
/// ids of a process share their first half.
public enum RandomID {
    private static let seeds: (UInt64, UInt64) = {
        var generator = SystemRandomNumberGenerator()
        return (generator.next(), generator.next())
    }()
    private static let counter = Atomic<UInt64>(0)

    /// A new id, `xxxxxxxx-xxxx-4xxx-yxxx-xxxxxxxxxxxx`.
    public static func uuidString() -> String {
        let count = counter.wrappingAdd(1, ordering: .relaxed).newValue
        // Version 4 in the third group's first digit, the RFC 4122 variant in the fourth's.
        let high = mix(seeds.0 &+ count) & 0xFFFF_FFFF_FFFF_0FFF | 0x0000_0000_0000_4000
        let low = mix(seeds.1 &+ count &* 0x9E37_79B9_7F4A_7C15) & 0x3FFF_FFFF_FFFF_FFFF | 0x8000_0000_0000_0000
        return String(unsafeUninitializedCapacity: 36) { buffer in
            let digits: StaticString = "0123456789abcdef"
            var position = 0
            func put(_ value: UInt64, nibbles: Int) {
                for shift in stride(from: (nibbles - 1) * 4, through: 0, by: -4) {
                    buffer[position] = digits.utf8Start[Int(value >> UInt64(shift) & 0xF)]
                    position += 1
                }
            }
            func dash() {
                buffer[position] = UInt8(ascii: "-")
                position += 1
            }
            put(high >> 32, nibbles: 8)
            dash()
            put(high >> 16, nibbles: 4)
            dash()
            put(high, nibbles: 4)
            dash()
            put(low >> 48, nibbles: 4)
            dash()
            put(low, nibbles: 12)
            return position
        }
    }

    /// SplitMix64's finalizer: a bijection of 64-bit values that scatters neighbouring counts.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
