#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// The process's open-file limit. Every connection is a descriptor, and a fresh Debian shell
/// allows 1,024: 1,000 event streams plus the store's files would not fit.
package enum OpenFileLimit {
    /// Raises the soft limit to the hard limit (children inherit it) and returns the limit now
    /// in force.
    @discardableResult
    package static func raiseToMaximum() -> UInt64 {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &raised) == 0 { return UInt64(raised.rlim_cur) }
        }
        return UInt64(limit.rlim_cur)
    }
}
