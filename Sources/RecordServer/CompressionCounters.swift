import Synchronization

/// What compression did, for `/metrics`: how many bodies and answers went compressed, and their
/// bytes on the wire against their bytes inflated.
package final class CompressionCounters: Sendable {
    private let requests = Atomic<Int>(0)
    private let requestWireBytes = Atomic<Int>(0)
    private let requestInflatedBytes = Atomic<Int>(0)
    private let answers = Atomic<Int>(0)
    private let answerIdentityBytes = Atomic<Int>(0)
    private let answerWireBytes = Atomic<Int>(0)

    package init() {}

    func compressedRequestArrived() { requests.wrappingAdd(1, ordering: .relaxed) }
    func requestReceived(compressedBytes: Int) { requestWireBytes.wrappingAdd(compressedBytes, ordering: .relaxed) }
    func requestInflated(bytes: Int) { requestInflatedBytes.wrappingAdd(bytes, ordering: .relaxed) }
    func compressedAnswerStarted(identityBytes: Int) {
        answers.wrappingAdd(1, ordering: .relaxed)
        answerIdentityBytes.wrappingAdd(identityBytes, ordering: .relaxed)
    }
    func compressedAnswerWrote(bytes: Int) { answerWireBytes.wrappingAdd(bytes, ordering: .relaxed) }

    /// The Prometheus text of the counters.
    func render() -> String {
        func counter(_ name: String, _ help: String, _ samples: [(String, Int)]) -> String {
            var out = "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
            for (labels, value) in samples { out += "\(name)\(labels) \(value)\n" }
            return out
        }
        return counter("scorebookd_gzip_requests_total", "Request bodies that arrived gzip-compressed.", [("", requests.load(ordering: .relaxed))])
            + counter("scorebookd_gzip_request_bytes_total", "Bytes of gzip request bodies, as sent (wire) and inflated.",
                      [("{form=\"wire\"}", requestWireBytes.load(ordering: .relaxed)),
                       ("{form=\"inflated\"}", requestInflatedBytes.load(ordering: .relaxed))])
            + counter("scorebookd_gzip_answers_total", "Answers sent gzip-compressed.", [("", answers.load(ordering: .relaxed))])
            + counter("scorebookd_gzip_answer_bytes_total", "Bytes of gzip-compressed answers, before (identity) and as sent (wire).",
                      [("{form=\"identity\"}", answerIdentityBytes.load(ordering: .relaxed)),
                       ("{form=\"wire\"}", answerWireBytes.load(ordering: .relaxed))])
    }
}
