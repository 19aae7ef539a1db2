import Foundation

/// What the kernel says about a running test process (Linux `/proc`).
enum ProcessStat {
    /// User plus system CPU time of a process, from /proc/PID/stat: an idle daemon or watcher
    /// must not burn CPU, and this is how the tests see it from outside.
    static func cpuSeconds(of pid: Int32) throws -> Double {
        let stat = try String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8)
        // Fields after the command name (which is in parentheses and may hold spaces).
        guard let close = stat.lastIndex(of: ")") else { throw DaemonError("unreadable /proc/\(pid)/stat") }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        // fields[0] is the state (field 3); utime and stime are fields 14 and 15.
        guard fields.count > 12, let user = Double(fields[11]), let system = Double(fields[12]) else {
            throw DaemonError("unreadable /proc/\(pid)/stat")
        }
        return (user + system) / Double(sysconf(Int32(_SC_CLK_TCK)))
    }

    /// A process's resident memory now and its peak (since `resetPeakMemory`), in MB, from /proc/PID/status.
    static func memory(of pid: Int32) throws -> (resident: Double, peak: Double) {
        let status = try String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8)
        func value(_ key: String) -> Double {
            let line = status.split(separator: "\n").first { $0.hasPrefix(key) } ?? ""
            return Double(line.split(separator: " ").dropFirst().first { !$0.isEmpty }.map(String.init) ?? "") .map { $0 / 1024 } ?? 0
        }
        return (value("VmRSS:"), value("VmHWM:"))
    }

    /// Starts measuring peak memory afresh (writing 5 to clear_refs resets the high-water mark).
    static func resetPeakMemory(of pid: Int32) throws {
        try "5".write(toFile: "/proc/\(pid)/clear_refs", atomically: false, encoding: .utf8)
    }
}
