import Foundation
import RecordModel
import SyncEngine

/// People behind user record names: the server's users are looked up by record name
/// (`users/discover`) or by email (`users/lookup/email`), and their names and emails kept in
/// the store so they show offline.
extension Scorebook {
    static func userNameKey(_ userRecordName: String) -> String { "userName:\(userRecordName)" }
    static func userEmailKey(_ userRecordName: String) -> String { "userEmail:\(userRecordName)" }

    /// The short name of a user this store has looked up, if any (`bob`).
    public func userName(_ userRecordName: String) throws -> String? {
        try store.setting(Self.userNameKey(userRecordName))
    }

    /// A user's short name when looked up (`bob`), else the user record name.
    public func shortName(_ userRecordName: String) -> String {
        ((try? userName(userRecordName)) ?? nil) ?? userRecordName
    }

    /// The logged-in user by name, looked up now if not yet known.
    public func accountLabel(_ account: SyncAccount) async -> String? {
        if !knowsUser(account.userRecordName) { await learnUsers([account.userRecordName]) }
        return personLabel(account.userRecordName)
    }

    /// How a person shows where a user record name stands for them: `alice <alice@example.com>`,
    /// or whichever of the two is known, else nil.
    public func personLabel(_ userRecordName: String) -> String? {
        let name = try? store.setting(Self.userNameKey(userRecordName))
        let email = try? store.setting(Self.userEmailKey(userRecordName))
        switch (name ?? nil, email ?? nil) {
        case let (name?, email?) where name != email: return "\(name) <\(email)>"
        case let (name?, _): return name
        case let (nil, email?): return email
        default: return nil
        }
    }

    /// A user named by email or user record name, by their short name (`bob`) when known.
    public func userLabel(_ who: String) -> String {
        let id = ((try? userName(who)) ?? nil) != nil ? who : userRecordNames(named: who).first
        return id.flatMap { (try? userName($0)) ?? nil } ?? who
    }

    /// A message with every user record name this store knows a person for replaced by that
    /// person (`this store holds the scorebook of another account (alice <alice@example.com>)`).
    func accountNamed(_ text: String) -> String {
        var named = text
        for key in (try? store.settingKeys(withPrefix: "userName:")) ?? [] {
            let id = String(key.dropFirst("userName:".count))
            guard named.contains(id), let label = personLabel(id) else { continue }
            named = named.replacingOccurrences(of: id, with: label)
        }
        return named
    }

    /// Remembers a user from a server answer (`users/discover`, a share's participant, an
    /// invitation's owner): its name and email, whichever it carries.
    func rememberUser(_ user: JSONValue?) {
        guard let user, let id = user["userRecordName"]?.stringValue else { return }
        let email = user["lookupInfo"]?["emailAddress"]?.stringValue ?? user["emailAddress"]?.stringValue
        let name = user["nameComponents"]?["givenName"]?.stringValue ?? user["name"]?.stringValue
        rememberUser(id, name: name, email: email)
    }

    func rememberUser(_ userRecordName: String, name: String?, email: String?) {
        if let name = name ?? email { try? store.setSetting(Self.userNameKey(userRecordName), name) }
        if let email { try? store.setSetting(Self.userEmailKey(userRecordName), email) }
    }

    /// Looks up users by record name and remembers them; best effort: a failure leaves the
    /// user record names showing.
    func learnUsers(_ userRecordNames: Set<String>) async {
        guard !userRecordNames.isEmpty, let client = try? accountClient() else { return }
        let lookups: [JSONValue] = userRecordNames.sorted().map { ["userRecordName": .string($0)] }
        guard let answer = try? await client.call("users/discover", ["lookupInfos": .array(lookups)], database: "public") else { return }
        for user in answer["users"]?.arrayValue ?? [] { rememberUser(user) }
    }

    /// Whether the server has a user with this email (an unknown email is absent from the
    /// answer); nil when the server could not be asked.
    func userExists(email: String) async -> Bool? {
        guard let client = try? accountClient(),
              let answer = try? await client.call("users/lookup/email", ["users": [["emailAddress": .string(email)]]], database: "public"),
              let users = answer["users"]?.arrayValue
        else { return nil }
        for user in users { rememberUser(user) }
        return users.contains { ($0["lookupInfo"]?["emailAddress"]?.stringValue ?? $0["emailAddress"]?.stringValue)?.lowercased() == email.lowercased() }
    }

    /// Whether both a user's name and email are known (an invitation, for one, gives only the name).
    func knowsUser(_ userRecordName: String) -> Bool {
        ((try? store.setting(Self.userEmailKey(userRecordName))) ?? nil) != nil
    }

    /// Looks up the names of every writer and every book owner not yet known.
    func learnWriterNames() async {
        guard let books = try? store.books() else { return }
        var unknown: Set<String> = []
        if let me = try? store.setting(SyncSettingKey.dataOwner), !knowsUser(me) { unknown.insert(me) }
        for summary in books {
            if !summary.book.ownerRecordName.isEmpty, !knowsUser(summary.book.ownerRecordName) {
                unknown.insert(summary.book.ownerRecordName)
            }
            guard let bookStore = try? store.opening(summary.book), let writers = try? bookStore.writerUserRecordNames() else { continue }
            for writer in writers where !knowsUser(writer) { unknown.insert(writer) }
        }
        await learnUsers(unknown)
    }

    /// The user record names whose remembered name or email is `who` (case-insensitive).
    func userRecordNames(named who: String) -> [String] {
        let lowered = who.lowercased()
        let keys = (try? store.settingKeys(withPrefix: "userName:")) ?? []
        let emails = (try? store.settingKeys(withPrefix: "userEmail:")) ?? []
        return Set((keys + emails).compactMap { key -> String? in
            guard (try? store.setting(key))??.lowercased() == lowered else { return nil }
            return String(key.drop { $0 != ":" }.dropFirst())
        }).sorted()
    }
}
