/// SHA-256 (FIPS 180-4), with no dependencies, for change tags, token hashes and content digests.
///
/// ```swift
/// SHA256.hexDigest("abc")  // "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
/// ```
public enum SHA256 {
    /// The 32-byte digest of `bytes`.
    public static func hash(_ bytes: [UInt8]) -> [UInt8] {
        bytes.withUnsafeBufferPointer { hash(UnsafeRawBufferPointer($0)) }
    }

    /// The 32-byte digest of the bytes in `buffer`.
    public static func hash(_ buffer: UnsafeRawBufferPointer) -> [UInt8] {
        var state: (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32) = (
            0x6a09_e667, 0xbb67_ae85, 0x3c6e_f372, 0xa54f_f53a, 0x510e_527f, 0x9b05_688c, 0x1f83_d9ab, 0x5be0_cd19
        )
        withUnsafeTemporaryAllocation(of: UInt32.self, capacity: 64) { schedule in
            let count = buffer.count
            let fullBlocks = count / 64
            for block in 0..<fullBlocks {
                compress(&state, UnsafeRawBufferPointer(rebasing: buffer[(block * 64)..<(block * 64 + 64)]), schedule)
            }

            // The tail: the remaining bytes, 0x80, zeros, and the length in bits, big-endian, in
            // one block if it fits in 55 bytes or fewer, else in two.
            let remaining = count - fullBlocks * 64
            let tailLength = remaining < 56 ? 64 : 128
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { tail in
                for i in 0..<tailLength { tail[i] = 0 }
                for i in 0..<remaining { tail[i] = buffer[fullBlocks * 64 + i] }
                tail[remaining] = 0x80
                let bitLength = UInt64(count) &* 8
                for i in 0..<8 { tail[tailLength - 1 - i] = UInt8(truncatingIfNeeded: bitLength >> (8 * UInt64(i))) }
                let raw = UnsafeRawBufferPointer(tail)
                compress(&state, UnsafeRawBufferPointer(rebasing: raw[0..<64]), schedule)
                if tailLength == 128 {
                    compress(&state, UnsafeRawBufferPointer(rebasing: raw[64..<128]), schedule)
                }
            }
        }
        var digest = [UInt8](repeating: 0, count: 32)
        let words = [state.0, state.1, state.2, state.3, state.4, state.5, state.6, state.7]
        for (i, word) in words.enumerated() {
            digest[i * 4] = UInt8(truncatingIfNeeded: word >> 24)
            digest[i * 4 + 1] = UInt8(truncatingIfNeeded: word >> 16)
            digest[i * 4 + 2] = UInt8(truncatingIfNeeded: word >> 8)
            digest[i * 4 + 3] = UInt8(truncatingIfNeeded: word)
        }
        return digest
    }

    /// The digest of the UTF-8 bytes of `string`, as 64 lowercase hex digits.
    public static func hexDigest(_ string: String) -> String {
        var string = string
        let digest = string.withUTF8 { hash(UnsafeRawBufferPointer($0)) }
        return hex(digest)
    }

    /// The digest of `bytes`, as 64 lowercase hex digits.
    public static func hexDigest(_ bytes: [UInt8]) -> String {
        hex(hash(bytes))
    }

    /// `bytes` as lowercase hex digits, two per byte.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits: [UInt8] = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            out.append(digits[Int(byte >> 4)])
            out.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    private static let roundConstants: [UInt32] = [
        0x428a_2f98, 0x7137_4491, 0xb5c0_fbcf, 0xe9b5_dba5, 0x3956_c25b, 0x59f1_11f1, 0x923f_82a4, 0xab1c_5ed5,
        0xd807_aa98, 0x1283_5b01, 0x2431_85be, 0x550c_7dc3, 0x72be_5d74, 0x80de_b1fe, 0x9bdc_06a7, 0xc19b_f174,
        0xe49b_69c1, 0xefbe_4786, 0x0fc1_9dc6, 0x240c_a1cc, 0x2de9_2c6f, 0x4a74_84aa, 0x5cb0_a9dc, 0x76f9_88da,
        0x983e_5152, 0xa831_c66d, 0xb003_27c8, 0xbf59_7fc7, 0xc6e0_0bf3, 0xd5a7_9147, 0x06ca_6351, 0x1429_2967,
        0x27b7_0a85, 0x2e1b_2138, 0x4d2c_6dfc, 0x5338_0d13, 0x650a_7354, 0x766a_0abb, 0x81c2_c92e, 0x9272_2c85,
        0xa2bf_e8a1, 0xa81a_664b, 0xc24b_8b70, 0xc76c_51a3, 0xd192_e819, 0xd699_0624, 0xf40e_3585, 0x106a_a070,
        0x19a4_c116, 0x1e37_6c08, 0x2748_774c, 0x34b0_bcb5, 0x391c_0cb3, 0x4ed8_aa4a, 0x5b9c_ca4f, 0x682e_6ff3,
        0x748f_82ee, 0x78a5_636f, 0x84c8_7814, 0x8cc7_0208, 0x90be_fffa, 0xa450_6ceb, 0xbef9_a3f7, 0xc671_78f2,
    ]

    @inline(__always)
    private static func rotateRight(_ x: UInt32, _ n: UInt32) -> UInt32 {
        (x >> n) | (x << (32 &- n))
    }

    /// Runs the compression function over one 64-byte block.
    private static func compress(
        _ state: inout (UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32, UInt32),
        _ block: UnsafeRawBufferPointer,
        _ w: UnsafeMutableBufferPointer<UInt32>
    ) {
        for t in 0..<16 {
            let i = t * 4
            w[t] = UInt32(block[i]) << 24 | UInt32(block[i + 1]) << 16 | UInt32(block[i + 2]) << 8 | UInt32(block[i + 3])
        }
        for t in 16..<64 {
            let w15 = w[t - 15], w2 = w[t - 2]
            let s0 = rotateRight(w15, 7) ^ rotateRight(w15, 18) ^ (w15 >> 3)
            let s1 = rotateRight(w2, 17) ^ rotateRight(w2, 19) ^ (w2 >> 10)
            w[t] = w[t - 16] &+ s0 &+ w[t - 7] &+ s1
        }

        var (a, b, c, d, e, f, g, h) = state
        roundConstants.withUnsafeBufferPointer { k in
            for t in 0..<64 {
                let s1 = rotateRight(e, 6) ^ rotateRight(e, 11) ^ rotateRight(e, 25)
                let choice = (e & f) ^ (~e & g)
                let t1 = h &+ s1 &+ choice &+ k[t] &+ w[t]
                let s0 = rotateRight(a, 2) ^ rotateRight(a, 13) ^ rotateRight(a, 22)
                let majority = (a & b) ^ (a & c) ^ (b & c)
                let t2 = s0 &+ majority
                h = g
                g = f
                f = e
                e = d &+ t1
                d = c
                c = b
                b = a
                a = t1 &+ t2
            }
        }
        state.0 = state.0 &+ a
        state.1 = state.1 &+ b
        state.2 = state.2 &+ c
        state.3 = state.3 &+ d
        state.4 = state.4 &+ e
        state.5 = state.5 &+ f
        state.6 = state.6 &+ g
        state.7 = state.7 &+ h
    }
}
