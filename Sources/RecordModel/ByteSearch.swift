#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A short needle found in bytes without allocating: the server tests each record of an answer
/// for an asset marker, and the bench scans what the daemon sends it, where a scan must stay
/// small next to the server work it measures.
public enum ByteSearch {
    /// The offset just past the first occurrence of `needle` in `bytes` at or after `start`.
    /// `memchr` runs to the needle's second byte, not its first, and `memcmp` checks each
    /// candidate: the needles searched for in JSON start with a quote, its most common byte,
    /// and a compare at every quote cost a fifth of writing a batch's answer. (`memmem` prepares
    /// its search anew on every call, which cost more than searching a record's few hundred bytes.)
    public static func offset(past needle: [UInt8], in bytes: UnsafeBufferPointer<UInt8>, from start: Int) -> Int? {
        guard let base = bytes.baseAddress, !needle.isEmpty else { return nil }
        let anchor = needle.count > 1 ? 1 : 0
        var position = start
        while position + needle.count <= bytes.count,
              let hit = memchr(base + position + anchor, Int32(needle[anchor]), bytes.count - position - needle.count + 1) {
            let found = base.distance(to: hit.assumingMemoryBound(to: UInt8.self)) - anchor
            if memcmp(base + found, needle, needle.count) == 0 { return found + needle.count }
            position = found + 1
        }
        return nil
    }
}
