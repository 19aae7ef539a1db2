import Logging
import RecordServer
import XCTest

/// The request loggers' handler: what it writes is what the wrapped handler would have written,
/// metadata set on the logger and given with the line both, the line's own winning.
final class DeferredMetadataLogHandlerTests: XCTestCase {
    func testLinesCarryTheLoggersMetadataAndTheirOwnAndHonourTheLevel() {
        let lines = LogLines()
        var base = Logger(label: "test") { _ in LogLines.Handler(lines: lines) }
        base[metadataKey: "daemon"] = "one"
        var logger = base.formattingMetadataWhenWritten
        logger[metadataKey: "hb.request.id"] = "7"
        XCTAssertEqual(logger[metadataKey: "daemon"], "one")
        logger.info("answered", metadata: ["status": "200", "hb.request.id": "own"])
        logger.debug("not written at info")
        logger.logLevel = .debug
        logger.debug("written at debug")
        XCTAssertEqual(lines.all, ["answered daemon=one hb.request.id=own status=200", "written at debug daemon=one hb.request.id=7"])
    }
}
