/// How far one sync has got, for a progress indicator: changes sent out of those queued, and
/// remote changes received (the feed does not say how many are coming).
public struct SyncProgress: Equatable, Sendable {
    public enum Phase: Equatable, Sendable {
        case sending
        case receiving
    }

    public var phase: Phase
    /// Local changes the server has answered for so far.
    public var sent: Int
    /// Local changes queued for sending in this sync (grows when a later round sends more).
    public var toSend: Int
    /// Remote changes (saved and deleted records) fetched so far.
    public var received: Int
    /// Pages of the change feed applied (each committed with the token it reached).
    public var pagesReceived = 0
    /// Where the receiving time went: waiting for pages, parsing them, applying them. The
    /// next page is fetched while one is applied, so these may add up to more than the wall clock.
    public var fetchSeconds: Double = 0
    public var decodeSeconds: Double = 0
    public var applySeconds: Double = 0
    /// The sync has ended (succeeded or failed); the indicator should go.
    public var finished: Bool
    /// A picture being uploaded or downloaded: bytes moved of its size (both 0 when none is).
    public var pictureBytes: Int64 = 0
    public var pictureTotalBytes: Int64 = 0
    public var pictureIsUpload = true

    public init(phase: Phase = .sending, sent: Int = 0, toSend: Int = 0, received: Int = 0, finished: Bool = false) {
        self.phase = phase
        self.sent = sent
        self.toSend = toSend
        self.received = received
        self.finished = finished
    }
}

/// Keeps the counts of one sync and passes each change of them to the handler.
final class SyncProgressReporter {
    private let handler: ((SyncProgress) -> Void)?
    private(set) var progress = SyncProgress()

    init(_ handler: ((SyncProgress) -> Void)?) { self.handler = handler }

    /// A send round begins with `queued` changes still to send.
    func sending(queued: Int) {
        progress.phase = .sending
        progress.toSend = max(progress.toSend, progress.sent + queued)
        report()
    }

    /// The server answered for `count` more changes.
    func sent(_ count: Int) {
        progress.sent += count
        progress.toSend = max(progress.toSend, progress.sent)
        report()
    }

    func receiving() {
        progress.phase = .receiving
        report()
    }

    /// One page of `count` changes was applied, after `fetch`, `decode` and `apply` seconds.
    func received(_ count: Int, fetch: Double = 0, decode: Double = 0, apply: Double = 0) {
        progress.phase = .receiving
        progress.received += count
        progress.pagesReceived += 1
        progress.fetchSeconds += fetch
        progress.decodeSeconds += decode
        progress.applySeconds += apply
        report()
    }

    func finish() {
        progress.finished = true
        report()
    }

    /// A picture transfer moved `bytes` of `total` (a finished one: `bytes == total`, then cleared).
    func picture(upload: Bool, bytes: Int64, total: Int64) {
        progress.pictureIsUpload = upload
        progress.pictureBytes = bytes >= total ? 0 : bytes
        progress.pictureTotalBytes = bytes >= total ? 0 : total
        report()
    }

    private func report() { handler?(progress) }
}
