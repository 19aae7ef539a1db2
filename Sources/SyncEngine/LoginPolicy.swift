/// The account rules of docs/guide/accounts.md as a pure function: whose data a store holds and
/// what logging in as a given user does to it.
package enum LoginPolicy {
    package enum Decision: Equatable, Sendable {
        /// The store's data (possibly none) becomes this user's and is uploaded on sync.
        case adopt
        /// The same user logs in again: carry on where the store left off.
        case resume
        /// Another user's data is in the store; it must never be uploaded to this account.
        case refuse(reason: String)
    }

    /// - Parameters:
    ///   - dataOwner: the user whose data the store holds; nil before the first login.
    ///   - hasLocalData: whether the store holds any record or unsent change.
    ///   - user: the user logging in.
    package static func decide(dataOwner: String?, hasLocalData: Bool, user: String) -> Decision {
        guard let dataOwner else { return .adopt }
        if dataOwner == user { return .resume }
        if !hasLocalData { return .adopt }
        return .refuse(reason: "this store holds the scorebook of another account (\(dataOwner)); "
            + "log in as that account, use another --store, or run 'scorebook account logout --delete-local' first")
    }
}
