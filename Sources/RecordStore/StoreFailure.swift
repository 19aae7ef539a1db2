import RecordModel

/// An error of a backend's own database that says whether it is transient: a lock another
/// process holds, or a full disk.
package protocol TransientStoreFailure: Error {
    var isBusy: Bool { get }
    var isDiskFailure: Bool { get }
}

extension ServerError {
    /// The answer for an error the store threw that is not already a `ServerError`.
    /// A lock held by another process past the busy timeout, or a full disk, is transient:
    /// `TRY_AGAIN_LATER` with `retryAfter`, which clients wait out. Anything else is an
    /// `INTERNAL_ERROR` whose reason does not echo SQL (the caller logs the detail).
    package init(storeFailure error: any Error) {
        if let failure = error as? any TransientStoreFailure {
            if failure.isBusy {
                self.init(.tryAgainLater, "the store is locked by another process; try again", retryAfter: 1)
                return
            }
            if failure.isDiskFailure {
                self.init(.tryAgainLater, "the store cannot write right now (disk full or I/O error); try again", retryAfter: 5)
                return
            }
        }
        self.init(.internalError, "internal error")
    }
}
