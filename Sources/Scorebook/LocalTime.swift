import Foundation
import SyncEngine

#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// Times as text output shows them: in the local time zone (the process's `TZ`,
/// else the system's) with its offset, `2026-11-24 17:12:05 +01:00`. JSON keeps ISO-8601 UTC
/// (`ISO8601.string`). The C library does the conversion: it reads `TZ` and the zone files
/// itself, and costs no ICU start-up.
public enum LocalTime {
    /// `2026-11-24 17:12:05 +01:00`, or without seconds, `2026-11-24 17:12 +01:00`.
    public static func string(from date: Date, seconds: Bool = true) -> String {
        let interval = date.timeIntervalSince1970.rounded(.down)
        guard interval.isFinite, abs(interval) < 1e15 else { return ISO8601.string(from: date) }
        var time = time_t(interval)
        var parts = tm()
        _ = initializeZone
        guard localtime_r(&time, &parts) != nil else { return ISO8601.string(from: date) }
        var text = "\(digits(Int(parts.tm_year) + 1900, 4))-\(digits(Int(parts.tm_mon) + 1, 2))-\(digits(Int(parts.tm_mday), 2))"
        text += " \(digits(Int(parts.tm_hour), 2)):\(digits(Int(parts.tm_min), 2))"
        if seconds { text += ":\(digits(Int(parts.tm_sec), 2))" }
        return text + " " + offset(seconds: Int(parts.tm_gmtoff))
    }

    /// `+01:00`, `-04:00`, `+05:30`, `+00:00`.
    static func offset(seconds: Int) -> String {
        let minutes = abs(seconds) / 60
        return (seconds < 0 ? "-" : "+") + digits(minutes / 60, 2) + ":" + digits(minutes % 60, 2)
    }

    private static func digits(_ value: Int, _ count: Int) -> String {
        let figures = String(value)
        return String(repeating: "0", count: max(0, count - figures.count)) + figures
    }

    /// Reads `TZ` once, before the first conversion.
    private static let initializeZone: Void = tzset()
}
