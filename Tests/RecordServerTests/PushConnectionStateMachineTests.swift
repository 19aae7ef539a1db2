import NIOCore
@testable import RecordServer
import XCTest

/// The transitions of a connection the push hub parks, event by event: what the handler is told
/// to do and where the connection ends up.
final class PushConnectionStateMachineTests: XCTestCase {
    private let empty = ByteBuffer(string: "empty answer")

    /// Park a long-poll, the hub's answer arrives (written, the response still open), the
    /// settle ends the response: the connection serves requests again.
    func testALongPollIsAnsweredThenSettledBackToServing() {
        var machine = PushConnectionStateMachine()
        XCTAssertEqual(machine.parkLongPoll(emptyAnswer: empty), .registerLongPoll(parking: 1))
        XCTAssertEqual(machine.state, .longPoll(emptyAnswer: empty))
        XCTAssertEqual(machine.delivered(parking: 1, channelIsWritable: true), .writeAnswer)
        XCTAssertEqual(machine.state, .answered)
        XCTAssertEqual(machine.delivered(parking: 1, channelIsWritable: true), .drop, "answered once")
        XCTAssertEqual(machine.heartbeat(parking: 1, channelIsWritable: true), .drop, "a long-poll takes no heartbeat")
        XCTAssertEqual(machine.timedOut(parking: 1), .none, "its deadline no longer answers it")
        XCTAssertTrue(machine.settle(parking: 1))
        XCTAssertEqual(machine.state, .serving)
        XCTAssertFalse(machine.settle(parking: 1), "settled once")
        XCTAssertEqual(machine.read(), .forward)
        XCTAssertFalse(machine.channelClosed(), "an answered long-poll is forgotten by the hub")
    }

    /// A second request pipelined behind a parked long-poll, and a close the framework asks for,
    /// are held until the answer's response ends; the next request after the answer ends it at once.
    func testWhatArrivesWhileParkedIsHeldUntilTheResponseEnds() {
        var machine = PushConnectionStateMachine()
        _ = machine.parkLongPoll(emptyAnswer: empty)
        XCTAssertEqual(machine.read(), .hold)
        XCTAssertEqual(machine.closeRequested(), .hold)
        XCTAssertEqual(machine.delivered(parking: 1, channelIsWritable: true), .writeAnswer)
        XCTAssertEqual(machine.closeRequested(), .hold)
        XCTAssertEqual(machine.read(), .holdAndEndResponse, "the next request ends the answered response")
        XCTAssertEqual(machine.state, .serving)
        XCTAssertFalse(machine.settle(parking: 1), "the later settle finds nothing to end")
        XCTAssertEqual(machine.closeRequested(), .close)
    }

    /// A long-poll's deadline answers it empty and ends its response at once; the deadline of an
    /// earlier parking does not touch the next one.
    func testATimeoutAnswersEmptyAndAnOldTimeoutIsIgnored() {
        var machine = PushConnectionStateMachine()
        _ = machine.parkLongPoll(emptyAnswer: empty)
        XCTAssertEqual(machine.timedOut(parking: 1), .answerEmpty(empty))
        XCTAssertEqual(machine.state, .serving)
        XCTAssertEqual(machine.timedOut(parking: 1), .none)
        let second = ByteBuffer(string: "second")
        XCTAssertEqual(machine.parkLongPoll(emptyAnswer: second), .registerLongPoll(parking: 2))
        XCTAssertEqual(machine.timedOut(parking: 1), .none, "the first parking's deadline")
        XCTAssertEqual(machine.delivered(parking: 1, channelIsWritable: true), .drop, "a delivery meant for the first parking")
        XCTAssertEqual(machine.finished(parking: 2), .answerEmpty(second), "the hub closing answers the current one empty")
    }

    /// The connection closes while a long-poll is parked: the handler must unregister it.
    func testAConnectionClosedWhileParkedIsUnregistered() {
        var machine = PushConnectionStateMachine()
        _ = machine.parkLongPoll(emptyAnswer: empty)
        XCTAssertTrue(machine.channelClosed())
        XCTAssertEqual(machine.state, .closed)
        XCTAssertEqual(machine.delivered(parking: 1, channelIsWritable: true), .drop)
        XCTAssertEqual(machine.timedOut(parking: 1), .none)
        XCTAssertEqual(machine.parkLongPoll(emptyAnswer: empty), .ignore, "nothing parks on a closed connection")
    }

    /// An event stream: opened, events written while the client reads, reads discarded and the
    /// handler reading itself, the framework's close ignored; a client that stops reading is
    /// closed; the client leaving closes it, and the close unregisters it.
    func testAnEventStreamCarriesEventsUntilTheClientLeaves() {
        var machine = PushConnectionStateMachine()
        XCTAssertEqual(machine.parkEventStream(), .openEventStream(parking: 1))
        XCTAssertEqual(machine.parkLongPoll(emptyAnswer: empty), .ignore, "one parking at a time")
        XCTAssertTrue(machine.readsItself)
        XCTAssertEqual(machine.closeRequested(), .succeedWithoutClosing, "the framework letting go of the connection")
        XCTAssertEqual(machine.delivered(parking: 1, channelIsWritable: true), .writeEvents)
        XCTAssertEqual(machine.delivered(parking: 1, channelIsWritable: true), .writeEvents, "a stream takes many deliveries")
        XCTAssertEqual(machine.heartbeat(parking: 1, channelIsWritable: true), .writeEvents)
        XCTAssertEqual(machine.heartbeat(parking: 2, channelIsWritable: true), .drop, "not this parking")
        XCTAssertEqual(machine.delivered(parking: 1, channelIsWritable: false), .closeSlowClient)
        XCTAssertEqual(machine.heartbeat(parking: 1, channelIsWritable: false), .closeSlowClient)
        XCTAssertEqual(machine.read(), .discard)
        XCTAssertTrue(machine.inputClosed(), "the client left: close")
        XCTAssertTrue(machine.channelClosed(), "still registered until the connection is gone")
        XCTAssertFalse(machine.readsItself)
    }

    /// The hub closing (shutdown) ends a stream: last chunk and close, after which nothing is
    /// registered and the framework's close goes through.
    func testTheHubEndsAStream() {
        var machine = PushConnectionStateMachine()
        _ = machine.parkEventStream()
        XCTAssertEqual(machine.finished(parking: 2), .none, "not this parking")
        XCTAssertEqual(machine.finished(parking: 1), .endEventStream)
        XCTAssertEqual(machine.state, .closed)
        XCTAssertEqual(machine.closeRequested(), .close)
        XCTAssertFalse(machine.channelClosed(), "unregistered when it ended")
    }

    /// While serving, everything passes through: reads, closes, the client closing its side.
    func testAServingConnectionPassesEverythingOn() {
        var machine = PushConnectionStateMachine()
        XCTAssertEqual(machine.read(), .forward)
        XCTAssertEqual(machine.closeRequested(), .close)
        XCTAssertFalse(machine.inputClosed())
        XCTAssertFalse(machine.readsItself)
        XCTAssertEqual(machine.delivered(parking: 0, channelIsWritable: true), .drop)
        XCTAssertFalse(machine.channelClosed())
    }
}
