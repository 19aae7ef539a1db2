import XCTest

@testable import RecordModel
import TestSupport

/// Property tests of the JSON codec with a fixed-seed generator (a failure is reproducible from
/// the printed iteration): every generated value survives `parse(serialize(x)) == x`, and random or
/// mutated bytes are either parsed or rejected with `JSONParseError` — never a crash or a hang.
final class JSONFuzzTests: XCTestCase {
    func testRoundTripOfRandomValues() throws {
        var generator = SplitMix64(seed: 0x5C0_4EB0_0C)
        for iteration in 0..<3_000 {
            let value = randomValue(&generator, depth: 0)
            let text = value.serialized()
            do {
                let parsed = try JSONValue.parse(text)
                XCTAssertEqual(parsed, value, "iteration \(iteration): \(String(decoding: text, as: UTF8.self))")
                if parsed != value { return }
            } catch {
                return XCTFail("iteration \(iteration): \(error) for \(String(decoding: text, as: UTF8.self))")
            }
        }
    }

    func testRandomBytesNeverCrashTheParser() {
        var generator = SplitMix64(seed: 7)
        let alphabet = Array(#"{}[]":,.-+eE0123456789tfnrulas\ "#.utf8) + [0x00, 0x0A, 0x80, 0xC3, 0xA9, 0xFF, 0xED]
        var accepted = 0
        for iteration in 0..<5_000 {
            let count = Int(generator.next() % 48)
            let bytes = (0..<count).map { _ -> UInt8 in
                generator.next() % 4 == 0 ? UInt8(truncatingIfNeeded: generator.next()) : alphabet[Int(generator.next() % UInt64(alphabet.count))]
            }
            if checkParsesOrRejects(bytes, iteration) { accepted += 1 }
        }
        XCTAssertGreaterThan(accepted, 0, "the generator also produces some valid documents")
    }

    func testMutationsOfValidDocumentsNeverCrashTheParser() {
        var generator = SplitMix64(seed: 1234)
        let seeds: [String] = [
            #"{"operations":[{"operationType":"create","record":{"recordName":"Game|~|1","recordType":"Game","fields":{"name":{"value":"Catan","type":"STRING"}}}}]}"#,
            #"{"zoneID":{"zoneName":"ScorebookData"},"syncToken":"ejF8YWJjfDF8Mg==","resultsLimit":5,"desiredKeys":["a","b"]}"#,
            #"[1,-2.5e10,true,false,null,"\u00e9\ud83c\udfb2\n",{"":[]}]"#,
        ]
        let interesting = Array(#"{}[]":,\u0-eE9"#.utf8) + [0x00, 0xFF, 0xC3]
        for iteration in 0..<6_000 {
            var bytes = Array(seeds[iteration % seeds.count].utf8)
            for _ in 0..<(1 + Int(generator.next() % 4)) {
                let position = Int(generator.next() % UInt64(bytes.count + 1))
                switch generator.next() % 5 {
                case 0 where position < bytes.count: bytes.remove(at: position)
                case 1: bytes.insert(interesting[Int(generator.next() % UInt64(interesting.count))], at: position)
                case 2 where position < bytes.count: bytes[position] = UInt8(truncatingIfNeeded: generator.next())
                case 3: bytes = Array(bytes.prefix(position))  // truncation
                default:
                    let start = Int(generator.next() % UInt64(bytes.count + 1))
                    bytes.insert(contentsOf: bytes[min(start, bytes.count)...].prefix(16), at: position)  // duplication
                }
            }
            checkParsesOrRejects(bytes, iteration)
        }
    }

    /// Parses `bytes`; a success must re-serialize to something that parses to the same value.
    @discardableResult
    func checkParsesOrRejects(_ bytes: [UInt8], _ iteration: Int) -> Bool {
        do {
            let value = try JSONValue.parse(bytes)
            XCTAssertEqual(try JSONValue.parse(value.serialized()), value, "iteration \(iteration): \(bytes)")
            return true
        } catch is JSONParseError {
            return false
        } catch {
            XCTFail("iteration \(iteration): unexpected error \(error) for \(bytes)")
            return false
        }
    }

    // MARK: Generation

    func randomValue(_ generator: inout SplitMix64, depth: Int) -> JSONValue {
        let kind = generator.next() % (depth >= 4 ? 5 : 7)
        switch kind {
        case 0: return .null
        case 1: return .bool(generator.next() % 2 == 0)
        case 2: return .int(randomInteger(&generator))
        case 3: return .double(randomDouble(&generator))
        case 4: return .string(randomString(&generator))
        case 5: return .array((0..<Int(generator.next() % 5)).map { _ in randomValue(&generator, depth: depth + 1) })
        default:
            var members: [String: JSONValue] = [:]
            for _ in 0..<Int(generator.next() % 5) { members[randomString(&generator)] = randomValue(&generator, depth: depth + 1) }
            return .object(members)
        }
    }

    func randomInteger(_ generator: inout SplitMix64) -> Int64 {
        switch generator.next() % 4 {
        case 0: return [Int64.min, .max, 0, -1, 1][Int(generator.next() % 5)]
        case 1: return Int64(bitPattern: generator.next())
        default: return Int64(generator.next() % 2000) - 1000
        }
    }

    func randomDouble(_ generator: inout SplitMix64) -> Double {
        switch generator.next() % 5 {
        case 0: return [0.5, -0.0, 1e15, 1e-7, Double.leastNonzeroMagnitude, .greatestFiniteMagnitude, 123456789.125, 2.0][Int(generator.next() % 8)]
        case 1:
            let bits = Double(bitPattern: generator.next())
            return bits.isFinite ? bits : 1.25
        case 2: return Double(Int64(generator.next() % 100_000) - 50_000)  // whole doubles must stay doubles
        default: return Double(Int64(generator.next() % 1_000_000)) / 1000
        }
    }

    func randomString(_ generator: inout SplitMix64) -> String {
        let pool: [Unicode.Scalar] = ["a", "Z", "0", " ", "\"", "\\", "/", "\n", "\t", "\u{0}", "\u{1F}", "\u{7F}", "é", "中",
                                      "\u{2028}", "\u{FEFF}", "🎲", "\u{10FFFF}", "|", "~"]
        var string = ""
        for _ in 0..<Int(generator.next() % 12) { string.unicodeScalars.append(pool[Int(generator.next() % UInt64(pool.count))]) }
        return string
    }
}
