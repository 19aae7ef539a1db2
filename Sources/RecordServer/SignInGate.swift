import Dispatch
import Foundation
import HummingbirdBcrypt
import Synchronization

/// Web sign-in passwords: bcrypt hashes (salted, deliberately slow), checked off the request's
/// thread. `scorebookd user password` and the password change share these rules.
package enum PasswordHashing {
    /// About 50 ms a hash on a current core: slow to guess, quick enough to sign in.
    static let cost: UInt8 = 10
    /// bcrypt reads at most 72 bytes; a longer password would be silently cut.
    static let maximumBytes = 72
    static let minimumCharacters = 8

    /// Why `password` cannot be a password, or nil when it can.
    package static func problem(_ password: String) -> String? {
        if password.count < minimumCharacters { return "a password needs at least \(minimumCharacters) characters" }
        if password.utf8.count > maximumBytes { return "a password can be at most \(maximumBytes) bytes" }
        return nil
    }

    package static func hash(_ password: String) async -> String {
        await offThread { Bcrypt.hash(password, cost: cost) }
    }

    /// Whether `password` matches `hash`; with no hash it still spends a check's time, so a
    /// missing user answers as slowly as a wrong password.
    static func verify(_ password: String, hash: String?) async -> Bool {
        await offThread { Bcrypt.verify(password, hash: hash ?? decoyHash) && hash != nil }
    }

    private static let decoyHash = Bcrypt.hash("not a password of anyone", cost: cost)

    private static func offThread<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(returning: work()) }
        }
    }
}

/// What web sign-in keeps between requests: the origins its page may hand a token to (the
/// daemon's CORS list) and recent failures, which throttle guessing per user and per address.
final class SignInGate: Sendable {
    static let allowedFailures = 5
    static let windowSeconds = 60.0

    private let crossOrigin = Mutex(CrossOriginPolicy())
    /// Times of recent failures by key (`user:NAME`, `address:IP`).
    private let failures = Mutex<[String: [Double]]>([:])
    private let clock: @Sendable () -> Double

    init(clock: @escaping @Sendable () -> Double = { Date().timeIntervalSinceReferenceDate }) {
        self.clock = clock
    }

    func setCrossOrigin(_ policy: CrossOriginPolicy) { crossOrigin.withLock { $0 = policy } }

    /// Whether the sign-in page may post a token to `origin`: an allowed one, never the wildcard.
    func allows(_ origin: String) -> Bool {
        origin != "*" && SignInGate.isOrigin(origin) && crossOrigin.withLock { $0.allows(origin) }
    }

    /// `scheme://host[:port]` and nothing else: the only thing postMessage may target.
    static func isOrigin(_ text: String) -> Bool {
        guard let components = URLComponents(string: text), let scheme = components.scheme, ["http", "https"].contains(scheme),
            let host = components.host, !host.isEmpty, components.path.isEmpty, components.query == nil, components.fragment == nil,
            components.user == nil
        else { return false }
        return text.allSatisfy { $0.isASCII && !$0.isWhitespace && $0 != "'" && $0 != "\"" && $0 != "<" && $0 != ">" && $0 != "\\" }
    }

    /// Seconds until the next attempt for any of `keys` may be made, or nil when it may be now.
    func retryAfter(_ keys: [String]) -> Int? {
        let now = clock()
        return failures.withLock { failures in
            let waits = keys.compactMap { key -> Double? in
                let recent = (failures[key] ?? []).filter { now - $0 < SignInGate.windowSeconds }
                failures[key] = recent.isEmpty ? nil : recent
                guard recent.count >= SignInGate.allowedFailures, let oldest = recent.first else { return nil }
                return SignInGate.windowSeconds - (now - oldest)
            }
            return waits.max().map { max(1, Int($0.rounded(.up))) }
        }
    }

    func recordFailure(_ keys: [String]) {
        let now = clock()
        failures.withLock { failures in
            // Bounded: a flood of distinct names forgets the oldest picture rather than growing.
            if failures.count > 100_000 { failures.removeAll() }
            for key in keys { failures[key, default: []].append(now) }
        }
    }
}
