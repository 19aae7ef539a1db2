import Foundation
import Synchronization

/// Request counts by operation and status and latency histograms by operation, rendered in the
/// Prometheus text format at `GET /metrics`.
package final class ServerMetrics: Sendable {
    static let bucketBounds: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60]

    private struct Histogram {
        var buckets = [Int](repeating: 0, count: ServerMetrics.bucketBounds.count)
        var count = 0
        var sum = 0.0
    }

    private struct State {
        var requests: [String: Int] = [:]  // "operation\u{0}status"
        var latencies: [String: Histogram] = [:]
        var openEventStreams = 0
        /// Answers `503 TRY_AGAIN_LATER` because the store could not serve (and `/ready` refusals).
        var storeUnavailable = 0
    }

    private let state = Mutex(State())
    /// gzip request bodies and answers (`CompressionMiddleware`).
    let compression = CompressionCounters()
    /// Webhook deliveries (`WebhookDeliveryService`).
    package let webhooks = WebhookCounters()

    package init() {}

    func record(operation: String, status: Int, seconds: Double) {
        state.withLock { state in
            state.requests["\(operation)\u{0}\(status)", default: 0] += 1
            var histogram = state.latencies[operation] ?? Histogram()
            for (index, bound) in ServerMetrics.bucketBounds.enumerated() where seconds <= bound { histogram.buckets[index] += 1 }
            histogram.count += 1
            histogram.sum += seconds
            state.latencies[operation] = histogram
        }
    }

    func storeUnavailableAnswered() { state.withLock { $0.storeUnavailable += 1 } }

    func eventStreamOpened() { state.withLock { $0.openEventStreams += 1 } }
    func eventStreamClosed() { state.withLock { $0.openEventStreams -= 1 } }

    var connectedEventStreams: Int { state.withLock { $0.openEventStreams } }

    /// The exposition text; `gauges` adds point-in-time values (name, help, value), `counters`
    /// totals kept elsewhere (name, help, total).
    func render(gauges: [(String, String, Double)], counters: [(String, String, Int)] = []) -> String {
        let (requests, latencies, storeUnavailable) = state.withLock { ($0.requests, $0.latencies, $0.storeUnavailable) }
        var out = "# HELP scorebookd_requests_total Requests by API operation and HTTP status.\n# TYPE scorebookd_requests_total counter\n"
        for (key, count) in requests.sorted(by: { $0.key < $1.key }) {
            let parts = key.split(separator: "\u{0}")
            out += "scorebookd_requests_total{operation=\"\(parts[0])\",status=\"\(parts[1])\"} \(count)\n"
        }
        out += "# HELP scorebookd_request_duration_seconds Request latency by API operation.\n# TYPE scorebookd_request_duration_seconds histogram\n"
        for (operation, histogram) in latencies.sorted(by: { $0.key < $1.key }) {
            for (index, bound) in ServerMetrics.bucketBounds.enumerated() {
                out += "scorebookd_request_duration_seconds_bucket{operation=\"\(operation)\",le=\"\(bound)\"} \(histogram.buckets[index])\n"
            }
            out += "scorebookd_request_duration_seconds_bucket{operation=\"\(operation)\",le=\"+Inf\"} \(histogram.count)\n"
            out += "scorebookd_request_duration_seconds_sum{operation=\"\(operation)\"} \(histogram.sum)\n"
            out += "scorebookd_request_duration_seconds_count{operation=\"\(operation)\"} \(histogram.count)\n"
        }
        out += "# HELP scorebookd_store_unavailable_total Answers refused because the store could not serve (503 TRY_AGAIN_LATER, /ready 503).\n"
        out += "# TYPE scorebookd_store_unavailable_total counter\nscorebookd_store_unavailable_total \(storeUnavailable)\n"
        out += compression.render()
        out += webhooks.render()
        for (name, help, total) in counters {
            out += "# HELP \(name) \(help)\n# TYPE \(name) counter\n\(name) \(total)\n"
        }
        for (name, help, value) in gauges {
            out += "# HELP \(name) \(help)\n# TYPE \(name) gauge\n\(name) \(value)\n"
        }
        return out
    }
}
