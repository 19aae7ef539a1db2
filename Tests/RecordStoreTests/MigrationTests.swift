import Foundation
import RecordModel
import PostgresRecordStore
import RecordStore
import SQLiteDB
import SQLiteRecordStore
import TestSupport
import XCTest

/// Issue 16: the server store's numbered migrations (`StoreMigration`). A store at version 1 (the
/// schema before migrations: no query index) opens with its records intact and queryable through
/// the backfilled index; a store newer than the binary is refused with a plain message.
final class MigrationTests: StoreTestCase {
    /// Runs SQL on this test's store directly (SQLite file or PostgreSQL database).
    func execute(_ statements: [String]) throws {
        switch Self.backend {
        case .sqlite:
            let connection = try SQLiteConnection(path: directory.appendingPathComponent(SQLiteRecordStore.databaseFileName).path)
            for statement in statements { try connection.execute(statement) }
        case .postgres:
            let database = String(postgresURL!.split(separator: "/").last!)
            try PostgresTestCluster.shared().psql(statements.joined(separator: "; "), database: database)
        }
    }

    /// Turns this test's store back into exactly what the version-1 code made: the same tables
    /// and indexes as `StoreMigration` step 1 creates, `schema_version` 1 (undoing steps 2 to 11).
    func downgradeToVersion1() throws {
        var statements = [
            "DROP TABLE query_index", "DROP TABLE query_counts", "UPDATE meta SET value = '1' WHERE key = 'schema_version'",
            // Step 3 (sharing).
            "DROP TABLE shares", "DROP TABLE share_participants", "DROP INDEX users_email", "ALTER TABLE users DROP COLUMN email",
            // Step 4 (server-to-server keys).
            "DROP TABLE server_keys",
            // Step 5 (assets).
            "DROP TABLE asset_uploads", "DROP TABLE asset_blobs",
            // Step 6 (fields indexed from their first query).
            "DROP TABLE query_fields",
            // Step 7 (token expiry and last use).
            "ALTER TABLE auth_tokens DROP COLUMN expires_at", "ALTER TABLE auth_tokens DROP COLUMN last_used_at",
            // Step 8 (web sign-in passwords).
            "ALTER TABLE users DROP COLUMN password_hash",
            // Step 9 (courier URLs bound to a token, ending unused).
            "ALTER TABLE push_tokens DROP COLUMN auth_token_hash", "ALTER TABLE push_tokens DROP COLUMN last_used_at",
            // Step 10 (where a courier's polls without a cursor were answered up to).
            "ALTER TABLE push_tokens DROP COLUMN delivered_cursor",
            // Step 11 (webhooks).
            "DROP TABLE webhooks", "DROP TABLE webhook_attempts",
            // Step 12 (webhooks read the zones' history).
            "DROP TABLE webhook_streams", "DROP TABLE webhook_backlog",
        ]
        if Self.backend == .postgres {
            statements += ["DROP TABLE asset_chunks", "DROP INDEX records_type_name", "CREATE INDEX records_type ON records (zone_id, type) WHERE deleted = 0"]
        }
        try execute(statements)
    }

    func testAVersion1StoreOpensMigratedWithItsRecordsIntactAndQueryable() throws {
        var operations: [(RecordOperationType, JSONValue)] = []
        for index in 0..<60 {
            operations.append((.create, record(String(format: "s%02d", index), "Score",
                                               ["value": field(.double(Double(index % 6)), "DOUBLE"), "label": field(.string("l\(index)"), "STRING")])))
        }
        try modify(dev, operations)
        try modify(dev, [(.forceDelete, record("s00"))])
        let before = try fetchChanges(dev).state
        store.close()
        store = nil
        try downgradeToVersion1()
        if Self.backend == .sqlite {
            // The fixture is the version-1 schema: the same objects as running step 1's DDL on an empty file.
            let fresh = directory.appendingPathComponent("v1-\(UUID().uuidString).sqlite").path
            let v1 = try SQLiteConnection(path: fresh)
            for statement in StoreSchema.version1 { try v1.execute(statement) }
            let objects = "SELECT type || ' ' || name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' ORDER BY name"
            let downgraded = try SQLiteConnection(path: directory.appendingPathComponent(SQLiteRecordStore.databaseFileName).path)
            XCTAssertEqual(try downgraded.map(objects) { $0.text(0) }, try v1.map(objects) { $0.text(0) })
        }

        store = BlockingStore(try Self.backend.open(directory: directory, postgresURL: postgresURL, clock: clock))
        let after = try fetchChanges(dev).state
        XCTAssertEqual(after.count, before.count)
        for (name, record) in before {
            XCTAssertEqual(after[name]??.changeTag, record?.changeTag, name)
            XCTAssertEqual(after[name]??.fieldsJSON, record?.fieldsJSON, name)
        }
        let equals = try RecordQuery(json: ["recordType": "Score", "filterBy": [["comparator": "EQUALS", "fieldName": "value", "fieldValue": ["value": 3]]]])
        let page = try store.queryRecords(dev, zone: .default, query: equals, resultsLimit: 200, continuationMarker: nil)
        XCTAssertEqual(page.records.map(\.recordName), stride(from: 3, to: 60, by: 6).map { String(format: "s%02d", $0) })
        XCTAssertEqual(page.rowsVisited, 10, "the backfilled index answers the filter")
        let sorted = try RecordQuery(json: ["recordType": "Score", "sortBy": [["fieldName": "value", "ascending": false]]])
        let top = try store.queryRecords(dev, zone: .default, query: sorted, resultsLimit: 5, continuationMarker: nil)
        XCTAssertEqual(top.records.map(\.recordName), ["s05", "s11", "s17", "s23", "s29"])
        XCTAssertLessThanOrEqual(top.rowsVisited, 6, "the backfilled counts let the descending sort skip the scan for missing values")

        // Writes after the migration keep the index; a second open runs no step again.
        try save(dev, .forceUpdate, record("s03", "Score", ["value": field(.double(100), "DOUBLE")]))
        try reopenStore()
        let moved = try store.queryRecords(dev, zone: .default, query: sorted, resultsLimit: 1, continuationMarker: nil)
        XCTAssertEqual(moved.records.map(\.recordName), ["s03"])
        XCTAssertEqual(try store.queryRecords(dev, zone: .default, query: equals, resultsLimit: 200, continuationMarker: nil).records.count, 9)
    }

    func testAStoreNewerThanThisBinaryIsRefused() throws {
        try save(dev, record("kept", "Score", ["value": field(.double(1), "DOUBLE")]))
        store.close()
        store = nil
        try execute(["UPDATE meta SET value = '\(StoreMigration.latestVersion + 1)' WHERE key = 'schema_version'"])
        XCTAssertThrowsError(try Self.backend.open(directory: directory, postgresURL: postgresURL, clock: clock)) { error in
            let message = String(describing: error)
            XCTAssertTrue(message.contains("newer than this scorebookd"), message)
            XCTAssertTrue(message.contains("version \(StoreMigration.latestVersion + 1)"), message)
        }
        // Refusing changed nothing: back at the binary's version, the store opens with its record.
        try execute(["UPDATE meta SET value = '\(StoreMigration.latestVersion)' WHERE key = 'schema_version'"])
        store = BlockingStore(try Self.backend.open(directory: directory, postgresURL: postgresURL, clock: clock))
        XCTAssertNotNil(try lookup(dev, "kept"))
    }

    /// Two daemons starting together on a version-1 PostgreSQL store: one migrates under the
    /// advisory lock, the other waits and finds the work done (a second backfill would collide
    /// with the first's index entries and fail its open).
    func testTwoStoresOpeningAVersion1DatabaseTogetherMigrateItOnce() throws {
        guard Self.backend == .postgres else { throw XCTSkip("concurrent opens of one PostgreSQL database") }
        try modify(dev, (0..<30).map { (.create, record("s\($0)", "Score", ["value": field(.double(Double($0 % 3)), "DOUBLE")])) })
        store.close()
        store = nil
        try downgradeToVersion1()
        let url = postgresURL!
        let read = clock.read
        let opened: [any RecordStorage] = try BlockingStore.run {
            async let first = PostgresRecordStore.open(url: url, clock: read)
            async let second = PostgresRecordStore.open(url: url, clock: read)
            return try await [first, second]
        }
        defer { for other in opened.dropFirst() { _ = try? BlockingStore.run { await other.close() } } }
        store = BlockingStore(opened[0])
        let equals = try RecordQuery(json: ["recordType": "Score", "filterBy": [["comparator": "EQUALS", "fieldName": "value", "fieldValue": ["value": 1]]]])
        for storage in opened {
            let page = try BlockingStore(storage).queryRecords(dev, zone: .default, query: equals, resultsLimit: 200, continuationMarker: nil)
            XCTAssertEqual(page.records.map(\.recordName).sorted(), stride(from: 1, to: 30, by: 3).map { "s\($0)" }.sorted())
            XCTAssertEqual(page.rowsVisited, 10, "each record indexed once")
        }
    }
}
