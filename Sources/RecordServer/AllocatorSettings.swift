#if canImport(Glibc)
import CMalloc
#endif

/// glibc's allocator tuned for a server that makes and frees buffers of 100-300 KB on every
/// request (a batch's body, its answer, the response buffer): the daemon applies it at start, and
/// the bench's in-process servers too, so they measure the daemon as it runs.
package enum AllocatorSettings {
    /// Fixed thresholds instead of glibc's sliding ones. Mapped (over 128 KB, glibc's default)
    /// each of those buffers was fresh pages, zeroed and faulted in one by one and unmapped
    /// again, 12 % of the daemon's time in a one-connection batch run. Up to 1 MB they come from
    /// the heap, which keeps up to 1 MB free at its top for the next request (trim threshold) and
    /// gives back the rest. The sliding threshold, which also reuses them, rises with every larger
    /// block freed and the trim threshold with it, to 64 MB: 20 parallel asset downloads then left
    /// the daemon at 135-296 MB (they read in pieces small enough for the heap's free lists,
    /// `RecordStorage.assetPieceBytes`). Same run, release, without these settings: 1.13-1.19x
    /// the daemon's CPU a record written (`batch-write-daemon`), 94.6 against 81 MB at the peak of
    /// parallel asset transfers (`assets`); see BENCHMARKS.md.
    package static func apply() {
        #if canImport(Glibc)
        _ = mallopt(M_MMAP_THRESHOLD, 1024 * 1024)
        _ = mallopt(M_TRIM_THRESHOLD, 1024 * 1024)
        #endif
    }
}
