import Synchronization

/// What webhook delivery did, for `/metrics`: events delivered, attempts that failed, endpoints
/// the daemon disabled after failing for the whole retry window, and the latest delivery's time
/// from commit.
package final class WebhookCounters: Sendable {
    private let delivered = Atomic<Int>(0)
    private let failedAttempts = Atomic<Int>(0)
    private let disabled = Atomic<Int>(0)

    package init() {}

    func eventsDelivered(_ count: Int) { delivered.wrappingAdd(count, ordering: .relaxed) }
    func attemptFailed() { failedAttempts.wrappingAdd(1, ordering: .relaxed) }
    func endpointDisabled() { disabled.wrappingAdd(1, ordering: .relaxed) }

    package var deliveredCount: Int { delivered.load(ordering: .relaxed) }

    /// The Prometheus text of the counters.
    func render() -> String {
        var out = ""
        for (name, help, value) in [
            ("scorebookd_webhook_events_delivered_total", "Webhook events a receiver acknowledged (2xx).", delivered.load(ordering: .relaxed)),
            ("scorebookd_webhook_attempts_failed_total", "Webhook delivery attempts that failed (non-2xx, timeout, refused).",
             failedAttempts.load(ordering: .relaxed)),
            ("scorebookd_webhook_endpoints_disabled_total", "Webhook endpoints this daemon disabled after failing for the whole retry window.",
             disabled.load(ordering: .relaxed)),
        ] {
            out += "# HELP \(name) \(help)\n# TYPE \(name) counter\n\(name) \(value)\n"
        }
        return out
    }
}
