import Foundation
import SyncEngine
import XCTest

/// `ISO8601.string(from:)` composes the text by hand (for CLI start-up time); it must print
/// every date exactly as `ISO8601DateFormatter` did.
final class ISO8601Tests: XCTestCase {
    let reference: ISO8601DateFormatter = {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter
    }()

    func testKnownDates() {
        XCTAssertEqual(ISO8601.string(from: Date(timeIntervalSince1970: 0)), "1970-01-01T00:00:00.000Z")
        XCTAssertEqual(ISO8601.string(from: Date(timeIntervalSince1970: 1_763_800_000.123)), "2025-11-22T08:26:40.123Z")
        XCTAssertEqual(ISO8601.string(from: Date(timeIntervalSince1970: 951_782_400)), "2000-02-29T00:00:00.000Z")
        XCTAssertEqual(ISO8601.string(from: Date(timeIntervalSince1970: -0.001)), "1969-12-31T23:59:59.999Z")
    }

    func testMatchesTheFormatterOnWholeMilliseconds() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            // 1583 to 9999, as the scorebook stores dates: whole milliseconds.
            let milliseconds = Int64.random(in: -12_000_000_000_000...253_000_000_000_000, using: &generator)
            let date = Date(timeIntervalSince1970: Double(milliseconds) / 1000)
            XCTAssertEqual(ISO8601.string(from: date), reference.string(from: date), "\(milliseconds) ms")
        }
    }

    func testMatchesTheFormatterOnFractionsOfMilliseconds() {
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<20_000 {
            let date = Date(timeIntervalSince1970: Double.random(in: -12_000_000_000...253_000_000_000, using: &generator))
            XCTAssertEqual(ISO8601.string(from: date), reference.string(from: date), "\(date.timeIntervalSince1970)")
        }
        for date in [Date.distantPast, Date.distantFuture, Date(timeIntervalSince1970: -13_000_000_000)] {
            XCTAssertEqual(ISO8601.string(from: date), reference.string(from: date))
        }
    }
}
