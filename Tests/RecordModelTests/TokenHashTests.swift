import XCTest

@testable import RecordStore

/// Known-answer tests of the token hash (swift-crypto's SHA-256, which replaced a hand-written
/// one: stores keep tokens as these hashes, so the digests must not change). The FIPS 180-4 / NIST vectors are from the standard's examples; the others
/// were computed with `printf '%s' … | sha256sum` (GNU coreutils).
final class TokenHashTests: XCTestCase {
    func testEmptyInput() {
        XCTAssertEqual(TokenHash.hex(""), "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    func testABC() {
        XCTAssertEqual(TokenHash.hex("abc"), "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
    }

    func test448BitMessage() {
        XCTAssertEqual(
            TokenHash.hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq"),
            "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    func test896BitMessage() {
        XCTAssertEqual(
            TokenHash.hex(
                "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu"),
            "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1")
    }

    func testOneMillionA() {
        let bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 1_000_000)
        XCTAssertEqual(TokenHash.hex(bytes), "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        XCTAssertEqual(
            TokenHash.hex(String(repeating: "a", count: 1_000_000)),
            "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
    }

    /// Lengths around the padding boundaries: 55 bytes is the longest message whose padding fits in
    /// one block; 56 needs a second block; 64 is exactly one block before padding.
    func testPaddingBoundariesRepeatedA() {
        let expected: [Int: String] = [
            55: "9f4390f8d30c2dd92ec9f095b65e2b9ae9b0a925a5258e241c9f1e910f734318",
            56: "b35439a4ac6f0948b6d6f9e3c6af0f5f590ce20f1bde7090ef7970686ec6738a",
            63: "7d3e74a05d7db15bce4ad9ec0658ea98e3f06eeecf16b4c6fff2da457ddc2f34",
            64: "ffe054fe7ae0cb6dc65c3af9b61d5209f439851db43d0ba5997337df154668eb",
            65: "635361c48bb9eab14198e76ea8ab7f1a41685d6ad62aa9146d301d4f17eb0ae0",
        ]
        for (length, digest) in expected {
            XCTAssertEqual(TokenHash.hex(String(repeating: "a", count: length)), digest, "length \(length)")
        }
    }

    func testPaddingBoundariesVariedText() {
        let pattern = String(repeating: "The quick brown fox jumps over the lazy dog 0123456789!", count: 3)
        let expected: [Int: String] = [
            55: "e54f2c62eab8d1e6613574a156e7e23ffcdd5738256c3e96066a5a444215e959",
            56: "bbe87e112bd8b902bbbc1c832287f4d3e645c6c639eff96261b2f5a40de32d1b",
            63: "aa505ecaa4398a09e6c5a936f26df38d9bc0dc453e27a8f6c1f82b44f0868cb3",
            64: "c15246559cdec1d091b4f022d21d9ec2b12fce5b58eb16f48443dd2b43cbdf92",
            65: "652dc6a10637d110bd0bac4209405fd6083a84afd9b6c3285edc574ac1485ca5",
            119: "17221af6a95a1210243db344bc05a11111d3f6bfec15182447a0adfd40ff02a5",
            120: "f632a095021cc03871dad74862d6fa0fbe65584e8548bd91f910c18b3cf149d6",
            127: "bacf235623d7b4d646b87d1095167e3ad694707fd767cf5d177faccf73f6ffa0",
            128: "6800e79648d5adb1e5239c8dba131d023ccf8ea6ea84e6deb0d04cb2ab6872ab",
            129: "c6014985cdd7c5adae99ee2909e8618d206d928c4d20d9fe9fde8556f1ab6335",
        ]
        for (length, digest) in expected {
            XCTAssertEqual(TokenHash.hex(String(pattern.prefix(length))), digest, "length \(length)")
        }
    }

    func testBinaryInput() {
        XCTAssertEqual(
            TokenHash.hex([UInt8](repeating: 0, count: 256)),
            "5341e6b2646979a70e57653007a1f310169421ec9bdd9f1a5648f75ade005af1")
        XCTAssertEqual(
            TokenHash.hex((0...255).map { UInt8($0) }),
            "40aff2e9d2d8922e47afd4648e6967497158785fbd1da870e7110266bf944880")
    }

    func testStringIsHashedAsUTF8() {
        // printf 'h\xc3\xa9llo \xe2\x9c\x93' | sha256sum
        XCTAssertEqual(TokenHash.hex("héllo ✓"), "5657cdef8a85a584e0e961e6f8247cf5d3f8ed21496ed6fdbcfd43a761e94245")
        XCTAssertEqual(TokenHash.hex("héllo ✓"), TokenHash.hex(Array("héllo ✓".utf8)))
    }
}
