import Foundation
import RecordModel
import RecordStore
import XCTest

extension BlockingStore {
    func issueToken(userName: String, expiresAt: Int64?) throws -> (user: User, token: String) {
        let answer = try wait { try await $0.issueToken(userName: userName, expiresAt: expiresAt) }
        return answer
    }

    func userSummaries() throws -> [String: UserSummary] {
        let summaries = try wait { try await $0.userSummaries() }
        return Dictionary(uniqueKeysWithValues: summaries.map { ($0.user.name, $0) })
    }

    func editUser(name: String, email: String) throws -> UserSummary { try wait { try await $0.editUser(name: name, email: email) } }
    func deleteUser(name: String) throws -> UserDeletion { try wait { try await $0.deleteUser(name: name) } }
    func checkIntegrity() throws -> [String] { try wait { try await $0.checkIntegrity() } }
    func setPasswordHash(userName: String, hash: String) throws -> User { try wait { try await $0.setPasswordHash(userName: userName, hash: hash) } }
    func passwordCredential(login: String) throws -> PasswordCredential? { try wait { try await $0.passwordCredential(login: login) } }
}

/// The administration of users at the store (`scorebookd user list | edit | delete`, expiring
/// tokens, last use), and `check` on a store with shares. Runs on SQLite, and on PostgreSQL with
/// SCOREBOOK_STORE_BACKEND=postgres.
final class UserAdministrationTests: StoreTestCase {
    func testExpiringTokensWorkUntilTheyExpireAndSaySo() throws {
        let day: Int64 = 86_400_000
        let expiring = try store.issueToken(userName: "alice", expiresAt: clock.now + day).token
        let lasting = try store.issueToken(userName: "alice", expiresAt: nil).token
        XCTAssertEqual(try store.authenticate(bearerToken: expiring)?.name, "alice")
        XCTAssertEqual(try store.userSummaries()["alice"]?.liveTokens, 3, "the first token, and both new ones")

        clock.advance(milliseconds: day + 1)
        let refusal = assertThrows(.authenticationFailed) { try store.authenticate(bearerToken: expiring) }
        XCTAssertTrue(refusal?.reason.contains("token expired") ?? false, "\(String(describing: refusal))")
        XCTAssertEqual(try store.authenticate(bearerToken: lasting)?.name, "alice")
        XCTAssertEqual(try store.userSummaries()["alice"]?.liveTokens, 2)
        let unknown = try store.authenticate(bearerToken: String(repeating: "ab", count: 32))
        XCTAssertNil(unknown, "an unknown token is still simply unknown")
    }

    func testLastUseIsWrittenAtMostOnceAMinutePerToken() throws {
        let token = try store.issueToken(userName: "alice").token
        XCTAssertNil(try store.userSummaries()["alice"]?.lastUsed, "never used")
        _ = try store.authenticate(bearerToken: token)
        let first = try XCTUnwrap(try store.userSummaries()["alice"]?.lastUsed)
        clock.advance(milliseconds: 30_000)
        _ = try store.authenticate(bearerToken: token)
        XCTAssertEqual(try store.userSummaries()["alice"]?.lastUsed, first, "within the minute: no write")
        clock.advance(milliseconds: 31_000)
        _ = try store.authenticate(bearerToken: token)
        let later = try XCTUnwrap(try store.userSummaries()["alice"]?.lastUsed)
        XCTAssertGreaterThanOrEqual(later - first, 61_000)
    }

    /// Four `user create` of one name at once: one user, three `EXISTS`.
    func testOneNameCreatedFourTimesAtOnceIsOneUser() throws {
        let base = store.base
        let outcomes = try BlockingStore.run {
            try await withThrowingTaskGroup(of: ServerErrorCode?.self) { group in
                for _ in 0..<4 {
                    group.addTask {
                        do {
                            _ = try await base.createUser(name: "carol")
                            return nil
                        } catch let error as ServerError {
                            return error.code
                        }
                    }
                }
                return try await group.reduce(into: [ServerErrorCode?]()) { $0.append($1) }
            }
        }
        XCTAssertEqual(outcomes.filter { $0 == nil }.count, 1, "\(outcomes)")
        XCTAssertEqual(outcomes.filter { $0 == .exists }.count, 3, "\(outcomes)")
        XCTAssertEqual(try store.listUsers().filter { $0.name == "carol" }.count, 1)
    }

    func testPasswordHashesAreFoundByNameOrEmail() throws {
        _ = try store.createUser(name: "bob", email: "Bob@Example.com")
        XCTAssertEqual(try store.passwordCredential(login: "bob"), PasswordCredential(user: try XCTUnwrap(store.listUsers().first { $0.name == "bob" }), hash: nil),
                       "no password yet")
        XCTAssertEqual(try store.setPasswordHash(userName: "bob", hash: "$2b$10$hash").name, "bob")
        XCTAssertEqual(try store.passwordCredential(login: "bob")?.hash, "$2b$10$hash")
        XCTAssertEqual(try store.passwordCredential(login: "BOB@example.com")?.user.name, "bob", "by email, in any case")
        XCTAssertNil(try store.passwordCredential(login: "nobody"))
        XCTAssertNil(try store.passwordCredential(login: "alice")?.hash, "another user's stays unset")
        assertThrows(.notFound) { try store.setPasswordHash(userName: "nobody", hash: "x") }
    }

    func testEditingAUsersEmailRefusesAnotherUsersAddress() throws {
        _ = try store.createUser(name: "bob", email: "bob@example.com")
        XCTAssertEqual(try store.editUser(name: "alice", email: " Alice@Example.COM ").email, "alice@example.com")
        XCTAssertEqual(try store.userSummaries()["alice"]?.email, "alice@example.com")
        assertThrows(.exists) { try store.editUser(name: "alice", email: "bob@example.com") }
        assertThrows(.badRequest) { try store.editUser(name: "alice", email: "not an address") }
        assertThrows(.notFound) { try store.editUser(name: "nobody", email: "n@example.com") }
        XCTAssertEqual(try store.discoverUsers(emails: ["alice@example.com"], recordNames: []).map(\.recordName), [alice.recordName])
    }

    func testDeletingAUserTakesItsDataTokensAndSharesAndParticipantsLoseTheBook() throws {
        let aliceToken = try store.issueToken(userName: "alice").token
        let bob = try store.createUser(name: "bob", email: "bob@example.com")
        let bobScope = try scope(bob.user, .development)
        let friday = ZoneID(zoneName: "Friday")
        _ = try store.createZone(dev, zoneName: "Friday")
        try save(dev, zone: friday, record("g1", "Game", ["name": field("Catan")]))
        let share = try save(dev, zone: friday, record("cloudkit.zoneshare", "cloudkit.share", ["cloudkit.title": field("Friday")])
            .setting("participants", [["type": "USER", "permission": "READ_WRITE",
                                       "userIdentity": ["lookupInfo": ["emailAddress": "bob@example.com"]]]]))
        let guid = try XCTUnwrap(try JSONValue.parse(share.json().serialized())["shortGUID"]?.stringValue)
        guard case .success = try store.resolveShares(bobScope, [guid], accept: true).first else { return XCTFail("bob accepts") }
        let bobShared = DatabaseScope(user: bob.user, container: Self.container, environment: .development, kind: .shared)
        XCTAssertEqual(try store.listZones(bobShared).map(\.zoneID.zoneName), ["Friday"])
        // Alice's place in one of bob's shares goes too.
        _ = try store.createZone(bobScope, zoneName: "Bobs")
        try save(bobScope, zone: ZoneID(zoneName: "Bobs"), record("cloudkit.zoneshare", "cloudkit.share", ["cloudkit.title": field("Bob's")])
            .setting("participants", [["type": "USER", "permission": "READ_ONLY",
                                       "userIdentity": ["lookupInfo": ["userRecordName": .string(alice.recordName)]]]]))
        XCTAssertEqual(try store.checkIntegrity(), [], "a store with shares is sound")

        let deletion = try store.deleteUser(name: "alice")
        XCTAssertEqual(deletion, UserDeletion(user: alice, zones: 1, shares: 1))
        XCTAssertNil(try store.authenticate(bearerToken: aliceToken), "her tokens are gone")
        XCTAssertEqual(try store.listZones(bobShared).count, 0, "bob lost her book")
        XCTAssertEqual(Set(try store.userSummaries().keys), ["bob"])
        XCTAssertEqual(try store.listZones(bobScope).map(\.zoneID.zoneName).sorted(), ["Bobs", "_defaultZone"], "bob keeps his own")
        XCTAssertEqual(try store.checkIntegrity(), [])
        assertThrows(.notFound) { try store.deleteUser(name: "alice") }

        // A new alice starts empty.
        let newAlice = try store.createUser(name: "alice").user
        XCTAssertNotEqual(newAlice.recordName, alice.recordName)
        XCTAssertEqual(try store.listZones(try scope(newAlice, .development)).map(\.zoneID.zoneName), ["_defaultZone"])
        XCTAssertEqual(try store.invitations(DatabaseScope(user: newAlice, container: Self.container, environment: .development, kind: .shared)), [])
    }
}

extension JSONValue {
    func setting(_ key: String, _ value: JSONValue) -> JSONValue {
        guard case .object(var members) = self else { return self }
        members[key] = value
        return .object(members)
    }
}
