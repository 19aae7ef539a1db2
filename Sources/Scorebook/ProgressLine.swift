import SyncEngine

/// The one-line progress indicator of a long sync, as text: nothing while the sync is younger
/// than `delay`, then `syncing [#######.....] 1,200/4,000 records` while sending, or
/// `syncing | fetched 1,200 records` (a spinner: the feed's total is unknown) while fetching.
/// Pure, so the CLI only decides where (standard error, a terminal) and when to draw it.
public struct ProgressLine: Equatable, Sendable {
    /// Seconds a sync runs before the indicator appears.
    public var delay: Double

    public init(delay: Double = 1) { self.delay = delay }

    static let spinner: [Character] = ["|", "/", "-", "\\"]
    static let widestBar = 30

    /// The text to show `elapsed` seconds into the sync on a terminal `width` columns wide, never
    /// wider than `width - 1` (so it does not wrap), or nil while there is nothing to show.
    public func text(elapsed: Double, progress: SyncProgress, width: Int) -> String? {
        guard elapsed >= delay, !progress.finished, width > 1 else { return nil }
        let line: String
        if progress.pictureTotalBytes > 0 {
            // A picture on its way counts its bytes: a download arrives in ranges, an upload is
            // streamed from its file in pieces.
            let total = Self.megabytes(progress.pictureTotalBytes)
            let counts = "\(Self.megabytes(progress.pictureBytes))/\(total) MB of a picture" + (progress.pictureIsUpload ? " sent" : "")
            let room = width - 1 - "syncing [".count - "] ".count - counts.count
            let cells = min(Self.widestBar, max(0, room))
            let filled = Int((Double(progress.pictureBytes) / Double(progress.pictureTotalBytes) * Double(cells)).rounded(.down))
            line = room >= 5
                ? "syncing [" + String(repeating: "#", count: filled) + String(repeating: ".", count: cells - filled) + "] " + counts
                : "syncing " + counts
        } else if progress.phase == .sending && progress.toSend > 0 {
            let sent = min(progress.sent, progress.toSend)
            let counts = "\(Self.grouped(sent))/\(Self.grouped(progress.toSend)) records"
            // "syncing [" + bar + "] " + counts, within width - 1.
            let room = width - 1 - "syncing [".count - "] ".count - counts.count
            if room >= 5 {
                let cells = min(Self.widestBar, room)
                let filled = Int((Double(sent) / Double(progress.toSend) * Double(cells)).rounded(.down))
                line = "syncing [" + String(repeating: "#", count: filled) + String(repeating: ".", count: cells - filled) + "] " + counts
            } else {
                line = "syncing " + counts
            }
        } else {
            let frame = Self.spinner[Int(max(0, elapsed) * 10) % Self.spinner.count]
            line = progress.phase == .receiving
                ? "syncing \(frame) fetched \(Self.grouped(progress.received)) records"
                : "syncing \(frame)"
        }
        return String(line.prefix(width - 1))
    }

    /// Bytes as megabytes with one decimal ("12.5").
    static func megabytes(_ bytes: Int64) -> String { String(format: "%.1f", Double(bytes) / 1_048_576) }

    /// The indicator a sync shows, or nil for none: shown when standard error is a terminal, or
    /// always with `SCOREBOOK_PROGRESS=always` (never with `never`); after
    /// `SCOREBOOK_PROGRESS_AFTER_MS` milliseconds (1000 by default).
    public static func configured(environment: [String: String], standardErrorIsTerminal: Bool) -> ProgressLine? {
        switch environment["SCOREBOOK_PROGRESS"]?.lowercased() {
        case "always": break
        case "never": return nil
        default: guard standardErrorIsTerminal else { return nil }
        }
        guard let text = environment["SCOREBOOK_PROGRESS_AFTER_MS"], let milliseconds = Int(text), milliseconds >= 0 else {
            return ProgressLine()
        }
        return ProgressLine(delay: Double(milliseconds) / 1000)
    }

    /// Text that erases a drawn line of `length` characters and returns the cursor to its start.
    public static func erasure(ofLength length: Int) -> String {
        "\r" + String(repeating: " ", count: length) + "\r"
    }

    /// `1234567` as `1,234,567`.
    public static func grouped(_ value: Int) -> String {
        let digits = String(value.magnitude)
        var out = ""
        for (index, digit) in digits.enumerated() {
            if index > 0 && (digits.count - index) % 3 == 0 { out.append(",") }
            out.append(digit)
        }
        return (value < 0 ? "-" : "") + out
    }
}
