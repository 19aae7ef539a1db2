import Dispatch
import Foundation
import RecordModel
import RecordStore
import TestSupport
import XCTest

/// The store suite's view of `any RecordStorage`: each call awaits the async protocol and hands
/// the answer back to the calling test thread (never a thread of Swift's cooperative pool), so one
/// set of synchronous test bodies, with their `XCTAssert…(try store.…)` lines, runs against every
/// backend. A call that does not finish within two minutes fails instead of hanging the run.
final class BlockingStore: Sendable {
    let base: any RecordStorage

    init(_ base: any RecordStorage) { self.base = base }

    func wait<T: Sendable>(_ body: @escaping @Sendable (any RecordStorage) async throws -> T) throws -> T {
        let base = self.base
        return try BlockingStore.run { try await body(base) }
    }

    /// Runs `body` to completion on the cooperative pool and returns its answer to this thread.
    static func run<T: Sendable>(_ body: @escaping @Sendable () async throws -> T) throws -> T {
        let outcome = LockedBox<Result<T, any Error>?>(nil)
        let done = DispatchSemaphore(value: 0)
        Task {
            do {
                outcome.set(.success(try await body()))
            } catch {
                outcome.set(.failure(error))
            }
            done.signal()
        }
        guard done.wait(timeout: .now() + 120) == .success, let result = outcome.value else {
            throw StoreCallTimedOut()
        }
        return try result.get()
    }

    struct StoreCallTimedOut: Error, CustomStringConvertible {
        var description: String { "a store call did not finish within 120 s" }
    }

    func createUser(name: String) throws -> (user: User, token: String) {
        let answer = try wait { try await $0.createUser(name: name) }
        return answer
    }

    func issueToken(userName: String) throws -> (user: User, token: String) {
        let answer = try wait { try await $0.issueToken(userName: userName) }
        return answer
    }

    func listUsers() throws -> [User] { try wait { try await $0.listUsers() } }
    func createAPIToken() throws -> String { try wait { try await $0.createAPIToken() } }
    func authenticate(bearerToken: String) throws -> User? { try wait { try await $0.authenticate(bearerToken: bearerToken) } }

    func authenticate(apiToken: String, webAuthToken: String) throws -> User? {
        try wait { try await $0.authenticate(apiToken: apiToken, webAuthToken: webAuthToken) }
    }

    func isValidAPIToken(_ apiToken: String) throws -> Bool { try wait { try await $0.isValidAPIToken(apiToken) } }
    func addServerKey(pem: String, name: String?) throws -> String { try wait { try await $0.addServerKey(pem: pem, name: name) } }
    func serverKey(keyID: String) throws -> ServerKey? { try wait { try await $0.serverKey(keyID: keyID) } }

    func listZones(_ scope: DatabaseScope) throws -> [ZoneInfo] { try wait { try await $0.listZones(scope) } }
    func lookupZone(_ scope: DatabaseScope, zoneName: String) throws -> ZoneInfo { try wait { try await $0.lookupZone(scope, zoneName: zoneName) } }
    func createZone(_ scope: DatabaseScope, zoneName: String) throws -> ZoneInfo { try wait { try await $0.createZone(scope, zoneName: zoneName) } }
    func deleteZone(_ scope: DatabaseScope, zoneName: String) throws { try wait { try await $0.deleteZone(scope, zoneName: zoneName) } }

    func modifyRecords(_ scope: DatabaseScope, zone: ZoneID, operations: [RecordOperation], atomic: Bool,
                       deviceID: String?) throws -> [RecordOperationResult]
    {
        try wait { try await $0.modifyRecords(scope, zone: zone, operations: operations, atomic: atomic, deviceID: deviceID) }
    }

    func lookupRecords(_ scope: DatabaseScope, zone: ZoneID, recordNames: [String]) throws -> [Result<StoredRecord, ServerError>] {
        try wait { try await $0.lookupRecords(scope, zone: zone, recordNames: recordNames) }
    }

    func queryRecords(_ scope: DatabaseScope, zone: ZoneID, query: RecordQuery, resultsLimit: Int,
                      continuationMarker: String?) throws -> QueryPage
    {
        try wait { try await $0.queryRecords(scope, zone: zone, query: query, resultsLimit: resultsLimit, continuationMarker: continuationMarker) }
    }

    func zoneChanges(_ scope: DatabaseScope, zone: ZoneID, syncToken: String?, resultsLimit: Int,
                     recordTypes: Set<String>?) throws -> ZoneChangesPage
    {
        try wait { try await $0.zoneChanges(scope, zone: zone, syncToken: syncToken, resultsLimit: resultsLimit, recordTypes: recordTypes) }
    }

    func databaseChanges(_ scope: DatabaseScope, syncToken: String?, resultsLimit: Int) throws -> DatabaseChangesPage {
        try wait { try await $0.databaseChanges(scope, syncToken: syncToken, resultsLimit: resultsLimit) }
    }

    func modifySubscriptions(_ scope: DatabaseScope, operations: [SubscriptionOperation]) throws -> [Result<Subscription?, ServerError>] {
        try wait { try await $0.modifySubscriptions(scope, operations: operations) }
    }

    func listSubscriptions(_ scope: DatabaseScope) throws -> [Subscription] { try wait { try await $0.listSubscriptions(scope) } }

    func createPushToken(_ scope: DatabaseScope, apnsEnvironment: String, authTokenHash: String? = nil) throws -> PushToken {
        try wait { try await $0.createPushToken(scope, apnsEnvironment: apnsEnvironment, authTokenHash: authTokenHash) }
    }

    func pushToken(_ scope: DatabaseScope, token: String) throws -> PushToken { try wait { try await $0.pushToken(scope, token: token) } }
    func courierChannel(token: String, container: String, environment: Environment) throws -> PushToken? {
        let answer = try wait { try await $0.courierChannel(token: token, container: container, environment: environment) }
        return answer
    }
    func advanceCourierPosition(token: String, to cursor: Int64) throws {
        try wait { try await $0.advanceCourierPosition(token: token, to: cursor) }
    }
    func revokeTokens(userName: String, token: String?) throws -> (user: User, revoked: Int) {
        let answer = try wait { try await $0.revokeTokens(userName: userName, token: token) }
        return answer
    }

    func notifications(databaseID: Int64, after cursor: Int64, limit: Int) throws -> [StoredNotification] {
        try wait { try await $0.notifications(databaseID: databaseID, after: cursor, limit: limit) }
    }

    func purgeNotifications(olderThanMilliseconds age: Int64) throws -> Int { try wait { try await $0.purgeNotifications(olderThanMilliseconds: age) } }
    func statistics() throws -> StoreStatistics { try wait { try await $0.statistics() } }
    func purgeTombstones(olderThanMilliseconds age: Int64) throws -> Int { try wait { try await $0.purgeTombstones(olderThanMilliseconds: age) } }
    func close() { _ = try? wait { await $0.close() } }
}
