import Logging
import Synchronization
import XCTest

@testable import RecordServer

/// The request loggers' handler: what it writes is what the wrapped handler would have written,
/// metadata set on the logger and given with the line both, the line's own winning.
final class DeferredMetadataLogHandlerTests: XCTestCase {
    final class Recorded: Sendable {
        let events = Mutex<[(level: Logger.Level, message: String, metadata: Logger.Metadata)]>([])
    }

    struct RecordingHandler: LogHandler {
        let recorded: Recorded
        var metadata: Logger.Metadata = [:]
        var logLevel: Logger.Level = .info
        subscript(metadataKey key: String) -> Logger.Metadata.Value? {
            get { metadata[key] }
            set { metadata[key] = newValue }
        }
        func log(event: LogEvent) {
            let merged = metadata.merging(event.metadata ?? [:]) { $1 }
            recorded.events.withLock { $0.append((event.level, "\(event.message)", merged)) }
        }
    }

    func testLinesCarryTheLoggersMetadataAndTheirOwnAndHonourTheLevel() {
        let recorded = Recorded()
        var base = Logger(label: "test") { _ in RecordingHandler(recorded: recorded) }
        base[metadataKey: "daemon"] = "one"
        var logger = base.formattingMetadataWhenWritten
        logger[metadataKey: "hb.request.id"] = "7"
        XCTAssertEqual(logger[metadataKey: "daemon"], "one")
        logger.info("answered", metadata: ["status": "200", "hb.request.id": "own"])
        logger.debug("not written at info")
        logger.logLevel = .debug
        logger.debug("written at debug")
        let events = recorded.events.withLock { $0 }
        XCTAssertEqual(events.map(\.message), ["answered", "written at debug"])
        XCTAssertEqual(events.first?.metadata, ["daemon": "one", "hb.request.id": "own", "status": "200"])
        XCTAssertEqual(events.last?.metadata, ["daemon": "one", "hb.request.id": "7"])
        XCTAssertEqual(events.last?.level, .debug)
    }
}
