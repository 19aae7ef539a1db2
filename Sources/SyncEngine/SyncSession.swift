import Foundation
import SQLiteDB

/// The account and sync switch a synchronizer was made for, as the store held them then.
///
/// Another process may log out, log in as someone else or turn sync off while a synchronizer
/// runs (`sync --watch`). Every write the engine makes from a server's answer, and the marking
/// of each batch just before it is sent, first checks in the same transaction that the store
/// still holds this session; so nothing fetched under the old token lands in the store, and no
/// edit leaves under a token other than the store owner's.
package struct SyncSession: Equatable, Sendable {
    /// The stored account as text (server, container, environment, token, user).
    let account: String
    /// A random value written with every change of the account or the switch (login, logout,
    /// `sync disable`): logging out and in again as the same user is a new session too.
    let generation: String

    /// The store's session now, or the reason there is none to sync under.
    static func current(in connection: SQLiteConnection) throws -> Result<SyncSession, SyncStopped> {
        guard let account = try LocalRecordStore.setting(SyncSettingKey.account, in: connection) else {
            return .failure(SyncStopped(.loggedOut))
        }
        guard try LocalRecordStore.setting(SyncSettingKey.syncEnabled, in: connection) != "0" else {
            return .failure(SyncStopped(.syncDisabled))
        }
        guard let generation = try LocalRecordStore.setting(SyncSettingKey.accountGeneration, in: connection) else {
            // A store written before generations existed: give it one.
            let generation = newGeneration()
            try LocalRecordStore.setSetting(SyncSettingKey.accountGeneration, generation, in: connection)
            return .success(SyncSession(account: account, generation: generation))
        }
        return .success(SyncSession(account: account, generation: generation))
    }

    /// Throws `SyncStopped` unless the store still holds this session.
    func verify(in connection: SQLiteConnection) throws {
        guard let account = try LocalRecordStore.setting(SyncSettingKey.account, in: connection) else {
            throw SyncStopped(.loggedOut)
        }
        guard try LocalRecordStore.setting(SyncSettingKey.syncEnabled, in: connection) != "0" else {
            throw SyncStopped(.syncDisabled)
        }
        guard account == self.account else { throw SyncStopped(.accountChanged) }
        guard try LocalRecordStore.setting(SyncSettingKey.accountGeneration, in: connection) == generation else {
            throw SyncStopped(.restarted)
        }
    }

    static func newGeneration() -> String { UUID().uuidString }
}

/// A sync or watch ended because the store's account or sync switch changed under it.
public struct SyncStopped: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Reason: String, Sendable {
        case loggedOut, accountChanged, syncDisabled
        /// Same account, but logged out and in again, or sync turned off and on, meanwhile.
        case restarted
    }

    public var reason: Reason

    public init(_ reason: Reason) { self.reason = reason }

    public var description: String {
        switch reason {
        case .loggedOut: return "stopped: the store was logged out"
        case .accountChanged: return "stopped: the store's account changed"
        case .restarted: return "stopped: the store was logged out and in again, or sync was turned off and on"
        case .syncDisabled: return "stopped: sync was disabled"
        }
    }
}
