import Foundation
import RecordModel
import XCTest

/// `RandomID`: the ids of requests and notifications are version-4 UUIDs in lowercase, and no
/// two of a process are alike.
final class RandomIDTests: XCTestCase {
    func testIdsAreLowercaseVersionFourUUIDsAndNeverRepeat() {
        var seen = Set<String>()
        for _ in 0..<100_000 {
            let id = RandomID.uuidString()
            seen.insert(id)
            let characters = Array(id)
            guard characters.count == 36, UUID(uuidString: id) != nil else { return XCTFail("not a UUID: \(id)") }
            XCTAssertEqual(id, id.lowercased())
            XCTAssertEqual(characters[14], "4", "version 4: \(id)")
            XCTAssertTrue("89ab".contains(characters[19]), "RFC 4122 variant: \(id)")
        }
        XCTAssertEqual(seen.count, 100_000)
    }

    /// Every hex digit turns up in every free position: the ids are not made of a few values.
    func testEveryFreeDigitTakesEveryValue() {
        var values = [Set<Character>](repeating: [], count: 36)
        for _ in 0..<2_000 {
            for (position, character) in RandomID.uuidString().enumerated() { values[position].insert(character) }
        }
        for position in 0..<36 where ![8, 13, 14, 18, 19, 23].contains(position) {
            XCTAssertEqual(values[position].count, 16, "position \(position): \(values[position].sorted())")
        }
    }
}
