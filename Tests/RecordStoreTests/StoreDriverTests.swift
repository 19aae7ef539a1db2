import Foundation
import PostgresRecordStore
import RecordModel
import RecordStore
import SQLiteDB
import SQLiteRecordStore
import Synchronization
import TestSupport
import XCTest

/// The store's values (both RecordStore and SQLiteDB, imported here, name one `SQLValue`).
private typealias SQLValue = RecordStore.SQLValue

/// The engine's driver on the backend this run tests (`StoreBackend.selected`): the dialect's
/// clauses and the driver's row operations, and on SQLite the group commit.
final class StoreDriverTests: XCTestCase {
    private var directory: URL!
    private var postgresURL: String?
    private var postgresStore: PostgresRecordStore?
    private var sqliteDriver: SQLiteStoreDriver?
    private var driver: (any StoreDriver)!

    override func setUpWithError() throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("driver-tests-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        switch StoreBackend.selected {
        case .sqlite:
            let database = try SQLiteDatabase(path: directory.appendingPathComponent("driver.sqlite").path)
            sqliteDriver = SQLiteStoreDriver(database: database)
            driver = sqliteDriver
        case .postgres:
            if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
            let url = try PostgresTestCluster.shared().createDatabase()
            postgresURL = url
            let store = try BlockingStore.run { try await PostgresRecordStore.open(url: url) }
            postgresStore = store
            driver = store.driver
        }
        _ = try run { driver in
            try await driver.write { connection in
                try await connection.execute("CREATE TABLE scratch (id bigint PRIMARY KEY, name text, score double precision, data bytea)")
            }
        }
    }

    override func tearDownWithError() throws {
        if let postgresStore { BlockingStore(postgresStore).close() }
        if let postgresURL, let name = postgresURL.split(separator: "/").last {
            try? PostgresTestCluster.shared().psql("DROP DATABASE IF EXISTS \(name)")
        }
        try? FileManager.default.removeItem(at: directory)
    }

    private func run<T: Sendable>(_ body: @escaping @Sendable (any StoreDriver) async throws -> T) throws -> T {
        let driver = self.driver!
        return try BlockingStore.run { try await body(driver) }
    }

    private func names() throws -> [String] {
        try run { driver in
            try await driver.read { try await $0.rows("SELECT name FROM scratch ORDER BY id").map { $0.text(0) } }
        }
    }

    func testPlaceholdersAreNumberedOnPostgreSQLOnlyAndQuotedQuestionMarksStayText() {
        let sql = "SELECT a FROM t WHERE b = ? AND c = '?' AND d IN (?, ?)"
        XCTAssertEqual(SQLiteDialect().placeholders(sql), sql)
        XCTAssertEqual(PostgresDialect().placeholders(sql), "SELECT a FROM t WHERE b = $1 AND c = '?' AND d IN ($2, $3)")
        XCTAssertEqual(SQLiteDialect().forUpdate, "")
        XCTAssertEqual(PostgresDialect().forUpdate, " FOR UPDATE")
    }

    func testUpsertReplacesTheConflictingRowAndChangedCountCountsRows() throws {
        let upsert = "INSERT INTO scratch (id, name) VALUES (?, ?) " + driver.dialect.upsert(conflict: ["id"], update: ["name"])
        let changed = try run { driver in
            try await driver.write { connection -> [Int] in
                [try await connection.execute(upsert, [1, "ann"]), try await connection.execute(upsert, [1, "bea"]),
                 try await connection.execute("INSERT INTO scratch (id, name) VALUES (2, 'cy')"),
                 try await connection.execute("UPDATE scratch SET score = 1.5 WHERE id >= ?", [1])]
            }
        }
        XCTAssertEqual(changed, [1, 1, 1, 2])
        XCTAssertEqual(try names(), ["bea", "cy"])
    }

    func testReturningGivesTheRowsTheStatementWrote() throws {
        let returned = try run { driver in
            try await driver.write { connection in
                try await connection.rows("INSERT INTO scratch (id, name, score) VALUES (?, ?, ?), (?, ?, ?) RETURNING id, name, score",
                                          [7, "ann", .double(2.5), 8, nil, .double(-1)])
            }
        }
        XCTAssertEqual(returned.map(\.values.count), [3, 3])
        XCTAssertEqual(returned.map { $0.int(0) }, [7, 8])
        XCTAssertEqual(returned.map { $0.optionalText(1) }, ["ann", nil])
        XCTAssertEqual(returned.map { $0.double(2) }, [2.5, -1])
    }

    func testBulkInsertWritesEveryRowWithNullsQuotesAndBytesInFewStatements() throws {
        // 1,300 rows: more than one multi-row statement on SQLite, and a remainder.
        let rows: [[SQLValue]] = (0..<1_300).map { index -> [SQLValue] in
            // Quotes, backslashes, the array syntax's own characters, and multi-byte characters
            // (an accent combined with its letter, an emoji with a skin tone) next to them.
            let name: SQLValue = index % 3 == 0 ? .null : .text("n\"a,m{e}\\ e\u{301}\"👍🏽\\ ü \(index)")
            let bytes: [UInt8] = [UInt8(index % 256), 0, 255]
            return [.int(Int64(index)), name, .double(Double(index) / 2), .blob(bytes)]
        }
        let columns = [StoreColumn("id", .integer), StoreColumn("name", .text), StoreColumn("score", .real), StoreColumn("data", .blob)]
        let returned = try run { driver in
            try await driver.write { connection in
                try await connection.insertRows(into: "scratch", columns: columns, rows: rows, suffix: "RETURNING id")
            }
        }
        XCTAssertEqual(returned.map { $0.int(0) }.sorted(), (0..<1_300).map(Int64.init))
        let stored = try run { driver in
            try await driver.read { try await $0.rows("SELECT id, name, score, data FROM scratch ORDER BY id").map(\.values) }
        }
        XCTAssertEqual(stored, rows)
    }

    func testForEachRowLendsEveryRowsColumnsInOrderWithNullsAndEmptyText() throws {
        let rows: [[SQLValue]] = [[.int(3), .text("three"), .blob([1, 2, 255])], [.int(-1), .null, .null], [.int(2), .text(""), .blob([])]]
        let read = try run { driver in
            try await driver.write { connection in
                try await connection.insertRows(into: "scratch", columns: [StoreColumn("id", .integer), StoreColumn("name", .text),
                                                                           StoreColumn("data", .blob)], rows: rows)
            }
            return try await driver.readStatement { connection in
                var seen: [String] = []
                try await connection.forEachRow("SELECT id, name, data FROM scratch WHERE id > ? ORDER BY id DESC", [.int(-5)]) { row in
                    let bytes = row.bytes(2).map { Array($0) }
                    seen.append("\(row.int(0)) \(row.isNull(1)) '\(row.text(1))' \(row.optionalText(1) == nil) \(bytes.map { "\($0)" } ?? "nil")")
                }
                return seen
            }
        }
        XCTAssertEqual(read, ["3 false 'three' false [1, 2, 255]", "2 false '' false []", "-1 true '' true nil"])
    }

    /// A script of one statement runs outside an explicit transaction (no `BEGIN` and `COMMIT`:
    /// on PostgreSQL two round trips, on SQLite two statements more), where a read transaction
    /// runs in one snapshot (PostgreSQL's repeatable read; on SQLite an open transaction, in
    /// which another `BEGIN` fails).
    func testReadStatementRunsWithoutTheReadTransactionsBegin() throws {
        guard StoreBackend.selected == .postgres else {
            let beginAndCommit: @Sendable (any StoreConnection) async throws -> Void = { connection in
                try await connection.execute("BEGIN DEFERRED", [])
                try await connection.execute("COMMIT", [])
            }
            XCTAssertNoThrow(try run { driver in try await driver.readStatement(beginAndCommit) }, "no transaction is open")
            XCTAssertThrowsError(try run { driver in try await driver.read(beginAndCommit) }, "a transaction is open")
            return
        }
        let isolation = "SELECT current_setting('transaction_isolation')"
        let levels = try run { driver in
            (try await driver.readStatement { try await $0.first(isolation)?.text(0) },
             try await driver.read { try await $0.first(isolation)?.text(0) })
        }
        XCTAssertEqual(levels.0, "read committed")
        XCTAssertEqual(levels.1, "repeatable read")
    }

    /// A zone's page is read along `records_seq` even before the table has statistics (a zone just
    /// filled): never a scan of every later record and a sort.
    func testZonePageIsPlannedAlongTheSequenceIndexWithoutStatistics() throws {
        guard StoreBackend.selected == .postgres else { return try zonePageIsPlannedAlongTheSequenceIndexOnSQLite() }
        let plan = try run { driver in
            try await driver.write { connection -> [String] in
                _ = try await Self.fillZoneWithoutStatistics("Big", connection)
                let page = StoreEngine.zonePage(.postgres, databaseID: 1, zoneName: "Big", after: 0, limit: 401)
                return try await connection.rows("EXPLAIN " + page.sql, page.arguments).map { $0.text(0) }
            }
        }.joined(separator: "\n")
        XCTAssertTrue(plan.contains("Index Scan using records_seq on records"), plan)
        XCTAssertFalse(plan.contains("Sort"), plan)
    }

    /// SQLite's plan of the page's join in a zone of 20,000 records: the zone's row, then
    /// `records_seq` in order, with no sort.
    private func zonePageIsPlannedAlongTheSequenceIndexOnSQLite() throws {
        let plan = try run { driver in
            try await driver.write { connection -> [String] in
                try await connection.execute("""
                    CREATE TABLE zones (id INTEGER PRIMARY KEY, database_id INTEGER NOT NULL, name TEXT NOT NULL,
                                        seq INTEGER NOT NULL DEFAULT 0, purged_seq INTEGER NOT NULL DEFAULT 0, deleted INTEGER NOT NULL DEFAULT 0)
                    """)
                try await connection.execute("CREATE UNIQUE INDEX zones_live_name ON zones (database_id, name) WHERE deleted = 0")
                for statement in StoreSchema.recordsTable { try await connection.execute(statement) }
                try await connection.execute("INSERT INTO zones (id, database_id, name, seq) VALUES (1, 1, 'Big', 20000)")
                try await connection.execute("""
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
                    INSERT INTO records (zone_id, name, type, tag, seq, fields, created_at, created_by, modified_at, modified_by)
                    SELECT 1, 'record-' || i, 'Score', 'tag', i, '{}', 0, '_u', 0, '_u' FROM n
                    """)
                let page = StoreEngine.zonePage(.sqlite, databaseID: 1, zoneName: "Big", after: 100, limit: 401)
                let sequences = try await connection.rows(page.sql, page.arguments).map { $0.int(12) }
                XCTAssertEqual(sequences, Array(101...501))
                return try await connection.rows("EXPLAIN QUERY PLAN " + page.sql, page.arguments).map { $0.text(3) }
            }
        }.joined(separator: "\n")
        XCTAssertTrue(plan.contains("USING INDEX records_seq (zone_id=? AND seq>?)"), plan)
        XCTAssertFalse(plan.contains("TEMP B-TREE"), plan)
        XCTAssertFalse(plan.contains("SCAN r"), plan)
    }

    /// A batch's read of its records and a lookup probe the primary key once a name, even in a
    /// zone PostgreSQL has no statistics for yet (filled a moment ago): never a scan of the zone.
    func testRecordsNamedProbeThePrimaryKeyWithoutStatistics() throws {
        guard StoreBackend.selected == .postgres else { return try recordsNamedProbeThePrimaryKeyOnSQLite() }
        let plans = try run { driver in
            try await driver.write { connection -> [String] in
                let zone = try await Self.fillZoneWithoutStatistics("Filled", connection)
                return try await Self.recordsNamedPlans(explain: "EXPLAIN", zone: zone, planColumn: 0, connection)
            }
        }
        for plan in plans {
            XCTAssertTrue(plan.contains("using records_pkey on records"), plan)
            XCTAssertFalse(plan.contains("Hash"), plan)
            XCTAssertFalse(plan.contains("records_seq"), plan)
        }
    }

    /// SQLite's plan of the same join in a zone of 20,000 records: the names outside, a search of
    /// the records' primary key inside, never a scan of the records.
    private func recordsNamedProbeThePrimaryKeyOnSQLite() throws {
        let plans = try run { driver in
            try await driver.write { connection -> [String] in
                try await connection.execute("""
                    CREATE TABLE records (zone_id INTEGER NOT NULL, name TEXT NOT NULL, seq INTEGER NOT NULL, deleted INTEGER NOT NULL,
                                          PRIMARY KEY (zone_id, name)) WITHOUT ROWID
                    """)
                try await connection.execute("CREATE UNIQUE INDEX records_seq ON records (zone_id, seq)")
                try await connection.execute("""
                    WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 20000)
                    INSERT INTO records SELECT 1, 'record-' || i, i, 0 FROM n
                    """)
                return try await Self.recordsNamedPlans(explain: "EXPLAIN QUERY PLAN", zone: 1, planColumn: 3, connection)
            }
        }
        for plan in plans {
            XCTAssertTrue(plan.contains("SEARCH r USING PRIMARY KEY"), plan)
            XCTAssertFalse(plan.contains("SCAN r"), plan)
        }
    }

    /// A PostgreSQL zone of 100,000 records inserted in one statement, so the table has no
    /// statistics yet (as a zone just filled); its row id.
    private static func fillZoneWithoutStatistics(_ name: String, _ connection: any StoreConnection) async throws -> Int64 {
        let zone = try await connection.rows("INSERT INTO zones (database_id, name, seq) VALUES (1, ?, 100000) RETURNING id", [.text(name)])[0].int(0)
        try await connection.execute("""
            INSERT INTO records (zone_id, name, type, tag, seq, fields, created_at, created_by, modified_at, modified_by)
            SELECT ?, 'record-' || i, 'Score', 'tag', i, '{}', 0, '_u', 0, '_u' FROM generate_series(1, 100000) i
            """, [.int(zone)])
        return zone
    }

    /// The plans of `recordsNamed` for 400 names of `zone`, inner and left (live only): each
    /// plan's `planColumn` joined by lines.
    private static func recordsNamedPlans(explain: String, zone: Int64, planColumn: Int, _ connection: any StoreConnection) async throws
        -> [String]
    {
        let names = JSONArgument.array((0..<400).map { "record-\($0 * 7)" })
        var plans: [String] = []
        for left in [false, true] {
            let sql = "\(explain) SELECT r.name, asked.value " + connection.dialect.recordsNamed(left: left, liveOnly: left)
            plans.append(try await connection.rows(sql, [.text(names), .int(zone)]).map { $0.text(planColumn) }.joined(separator: "\n"))
        }
        return plans
    }

    func testRecordsNamedFindsTheNamedRecordsOfTheZoneInTheirOrder() throws {
        let found = try run { driver in
            try await driver.write { connection -> [String] in
                // The PostgreSQL store's own tables exist; the SQLite driver's scratch database has none.
                if connection.dialect.kind == .sqlite {
                    try await connection.execute("""
                        CREATE TABLE records (zone_id INTEGER, name TEXT, seq INTEGER, deleted INTEGER, type TEXT, tag TEXT, fields BLOB,
                                              created_at INTEGER, created_by TEXT, modified_at INTEGER, modified_by TEXT, PRIMARY KEY (zone_id, name))
                        """)
                } else {
                    for (zone, name) in [(101, "Games"), (102, "Other")] {
                        try await connection.execute("INSERT INTO zones (id, database_id, name, seq) VALUES (?, 1, ?, 10)", [.int(Int64(zone)), .text(name)])
                    }
                }
                let rows: [(Int64, String, Int64)] = [(101, "a \"quoted\" ü", 0), (101, "b", 0), (101, "gone", 1), (102, "c", 0)]
                for (index, row) in rows.enumerated() {
                    try await connection.execute("""
                        INSERT INTO records (zone_id, name, seq, deleted, type, tag, fields, created_at, created_by, modified_at, modified_by)
                        VALUES (?, ?, ?, ?, 'Score', 'tag', '{}', 0, '_u', 0, '_u')
                        """, [.int(row.0), .text(row.1), .int(Int64(index + 1)), .int(row.2)])
                }
                let asked = JSONArgument.array(["b", "c", "gone", "a \"quoted\" ü", "absent"])
                var found: [String] = []
                for (left, liveOnly) in [(false, false), (true, true)] {
                    let sql = "SELECT asked.value, r.name " + connection.dialect.recordsNamed(left: left, liveOnly: liveOnly) + " ORDER BY asked.position"
                    found.append(try await connection.rows(sql, [.text(asked), .int(101)]).map { $0.text(0) + "=" + ($0.optionalText(1) ?? "-") }
                        .joined(separator: ","))
                }
                return found
            }
        }
        XCTAssertEqual(found, ["b=b,gone=gone,a \"quoted\" ü=a \"quoted\" ü",
                               "b=b,c=-,gone=-,a \"quoted\" ü=a \"quoted\" ü,absent=-"])
    }

    func testNameInJSONArrayMatchesExactlyTheNamesGiven() throws {
        let names: [String] = ["plain", "with \"quote\"", "comma, {brace}", "ünï"]
        let found = try run { driver in
            try await driver.write { connection -> [String] in
                for (index, name) in (names + ["other"]).enumerated() {
                    try await connection.execute("INSERT INTO scratch (id, name) VALUES (?, ?)", [.int(Int64(index)), .text(name)])
                }
                return try await connection.rows("SELECT name FROM scratch WHERE " + connection.dialect.isInJSONArray("name") + " ORDER BY id",
                                                 [.text(JSONArgument.array(names + ["absent"]))]).map { $0.text(0) }
            }
        }
        XCTAssertEqual(found, names)
    }

    func testPairInJSONArrayMatchesExactlyThePairsGiven() throws {
        let stored = [("a", "x"), ("a", "y"), ("b", "x"), ("b \"q\", {c}", "ü")]
        let found = try run { driver in
            try await driver.write { connection -> [String] in
                try await connection.execute("CREATE TABLE pairs (id bigint PRIMARY KEY, first text, second text)")
                for (index, pair) in stored.enumerated() {
                    try await connection.execute("INSERT INTO pairs (id, first, second) VALUES (?, ?, ?)", [.int(Int64(index)), .text(pair.0), .text(pair.1)])
                }
                let wanted = JSONArgument.pairs([("a", "x"), ("b \"q\", {c}", "ü"), ("b", "y"), ("x", "a"), ("absent", "x")])
                return try await connection.rows("SELECT first, second FROM pairs WHERE " + connection.dialect.isPairInJSONArray("first", "second")
                                                 + " ORDER BY id", [.text(wanted)]).map { $0.text(0) + "/" + $0.text(1) }
            }
        }
        XCTAssertEqual(found, ["a/x", "b \"q\", {c}/ü"])
    }

    /// The clauses only one backend has: an advisory lock across processes and a check of the file.
    func testExclusiveLockAndFileCheckRunWhereTheBackendHasThem() throws {
        XCTAssertNil(SQLiteDialect().exclusiveLock(7))
        XCTAssertNil(PostgresDialect().fileCheck)
        XCTAssertEqual(SQLiteDialect().jsonDocument(Array("{}".utf8)), .blob(Array("{}".utf8)))
        XCTAssertEqual(PostgresDialect().jsonDocument(Array("{}".utf8)), .text("{}"))
        let verdict = try run { driver in
            try await driver.write { connection -> [String] in
                if let lock = connection.dialect.exclusiveLock(7) { try await connection.execute(lock) }
                guard let check = connection.dialect.fileCheck else { return ["ok"] }
                return try await connection.rows(check).map { $0.text(0) }
            }
        }
        XCTAssertEqual(verdict, ["ok"])
    }

    func testJSONArrayElementsKeepTheArraysOrderAndRepeatsJoiningRowsOrNothing() throws {
        let asked: [String] = ["zeta", "with \"quote\"", "absent", "zeta", "ünï"]
        let found = try run { driver in
            try await driver.write { connection -> [String] in
                for (index, name) in ["ünï", "zeta", "with \"quote\"", "other"].enumerated() {
                    try await connection.execute("INSERT INTO scratch (id, name) VALUES (?, ?)", [.int(Int64(index)), .text(name)])
                }
                return try await connection.rows(
                    "SELECT asked.value, s.id FROM " + connection.dialect.jsonArrayElements(as: "asked")
                        + " LEFT JOIN scratch s ON s.name = asked.value ORDER BY asked.position",
                    [.text(JSONArgument.array(asked))]
                ).map { "\($0.text(0))=\($0.optionalInt(1).map(String.init) ?? "-")" }
            }
        }
        XCTAssertEqual(found, ["zeta=1", "with \"quote\"=2", "absent=-", "zeta=1", "ünï=0"])
    }

    /// The commit hook hears of a kept transaction, with its answer, by the time the caller has
    /// it, and of nothing else: not a rollback, not a failure.
    func testTheCommitHookHearsOfKeptTransactionsOnly() throws {
        let heard = LockedBox<[String]>([])
        let answers = try run { driver -> [String] in
            var answers: [String] = []
            let kept = try await driver.writeTransaction(size: 1, { connection -> TransactionOutcome<String> in
                try await connection.execute("INSERT INTO scratch (id, name) VALUES (1, 'kept')")
                return .commit("kept")
            }, committed: { answer in heard.withLock { $0.append(answer) } })
            answers.append(kept + " heard " + heard.value.joined(separator: ","))
            answers.append(try await driver.writeTransaction(size: 1, { connection -> TransactionOutcome<String> in
                try await connection.execute("INSERT INTO scratch (id, name) VALUES (2, 'undone')")
                return .rollback("undone")
            }, committed: { answer in heard.withLock { $0.append(answer) } }))
            do {
                _ = try await driver.writeTransaction(size: 1, { _ -> TransactionOutcome<String> in throw ServerError(.conflict, "refused") },
                                                      committed: { answer in heard.withLock { $0.append(answer) } })
            } catch {
                answers.append("threw")
            }
            return answers
        }
        XCTAssertEqual(answers, ["kept heard kept", "undone", "threw"])
        XCTAssertEqual(heard.value, ["kept"])
        XCTAssertEqual(try names(), ["kept"])
    }

    func testARolledBackOrFailedWriteLeavesNothingAndTheNextWriteCommits() throws {
        let answer = try run { driver in
            try await driver.writeTransaction { connection -> TransactionOutcome<String> in
                try await connection.execute("INSERT INTO scratch (id, name) VALUES (1, 'undone')")
                return .rollback("answered")
            }
        }
        XCTAssertEqual(answer, "answered")
        XCTAssertThrowsError(try run { driver in
            try await driver.write { connection in
                try await connection.execute("INSERT INTO scratch (id, name) VALUES (2, 'failed')")
                throw ServerError(.conflict, "refused")
            }
        }) { XCTAssertEqual(($0 as? ServerError)?.code, .conflict) }
        _ = try run { driver in try await driver.write { try await $0.execute("INSERT INTO scratch (id, name) VALUES (3, 'kept')") } }
        XCTAssertEqual(try names(), ["kept"])
    }

    /// Writes queued while the writer is busy commit as one group; within it a failing
    /// transaction and one that rolls back undo only their own writes (their savepoints).
    func testGroupCommitUndoesOnlyTheFailedTransactionsOfAGroup() throws {
        guard let sqliteDriver else { throw XCTSkip("group commit is the SQLite writer's") }
        struct Refused: Error {}
        let groupsBefore = sqliteDriver.writer.groupsCommitted.load(ordering: .relaxed)
        let outcomes = Outcomes()
        try queueBehindTheBusyWriter(sqliteDriver, count: 5) { driver, index in
            do {
                let name = try await driver.writeTransaction { connection -> TransactionOutcome<String> in
                    try await connection.execute("INSERT INTO scratch (id, name) VALUES (?, ?)", [.int(Int64(index)), .text("w\(index)")])
                    if index == 1 { throw Refused() }
                    return index == 3 ? .rollback("r\(index)") : .commit("w\(index)")
                }
                outcomes.add(name)
            } catch {
                outcomes.add(error is Refused ? "refused" : "\(error)")
            }
        }
        XCTAssertEqual(outcomes.sorted, ["r3", "refused", "w0", "w2", "w4"])
        XCTAssertEqual(sqliteDriver.writer.groupsCommitted.load(ordering: .relaxed), groupsBefore + 1, "one COMMIT for the group")
        XCTAssertEqual(try names(), ["w0", "w2", "w4"])
    }

    /// Holds the writer while `count` writes (`write(driver, index)`, each in a task of its own)
    /// queue behind it one after another, so their order in the queue is known; then lets the
    /// writer go and waits for every write to end.
    private func queueBehindTheBusyWriter(_ driver: SQLiteStoreDriver, count: Int,
                                          _ write: @escaping @Sendable (SQLiteStoreDriver, Int) async -> Void) throws
    {
        _ = driver.database.lockWriter()
        let finished = DispatchSemaphore(value: 0)
        for index in 0..<count {
            Task.detached {
                await write(driver, index)
                finished.signal()
            }
            for _ in 0..<500 where driver.writer.queuedCount <= index { Thread.sleep(forTimeInterval: 0.01) }
        }
        let queued = driver.writer.queuedCount
        driver.database.unlockWriter()
        XCTAssertEqual(queued, count, "every write queued behind the busy writer")
        for _ in 0..<count { XCTAssertEqual(finished.wait(timeout: .now() + 30), .success) }
    }

    /// A group carries at most `maximumGroupSize` rows: five queued batches of 40 % of it each
    /// commit in three groups (two, two, one), in the order they queued.
    func testAGroupCarriesAtMostTheMaximumGroupSize() throws {
        guard let sqliteDriver else { throw XCTSkip("group commit is the SQLite writer's") }
        let groupsBefore = sqliteDriver.writer.groupsCommitted.load(ordering: .relaxed)
        let transactionsBefore = sqliteDriver.writer.transactionsCommitted.load(ordering: .relaxed)
        let size = GroupCommitWriter.maximumGroupSize * 2 / 5
        try queueBehindTheBusyWriter(sqliteDriver, count: 5) { driver, index in
            _ = try? await driver.writeTransaction(size: size, { connection -> TransactionOutcome<Int> in
                try await connection.execute("INSERT INTO scratch (id, name) VALUES (?, ?)", [.int(Int64(index)), .text("w\(index)")])
                return .commit(index)
            }, committed: { _ in })
        }
        XCTAssertEqual(sqliteDriver.writer.transactionsCommitted.load(ordering: .relaxed), transactionsBefore + 5)
        XCTAssertEqual(sqliteDriver.writer.groupsCommitted.load(ordering: .relaxed), groupsBefore + 3, "groups of two, two and one")
        XCTAssertEqual(try names(), ["w0", "w1", "w2", "w3", "w4"])
    }

    func testJSONBytesGoInTheFieldsColumnsTypeAndComeBackAsTheSameBytes() throws {
        let json = Array(#"{"title":{"value":"Grand \"Final\" ü"}}"#.utf8)
        let read = try run { driver in
            try await driver.write { connection -> [UInt8] in
                try await connection.execute("CREATE TABLE documents (id bigint PRIMARY KEY, fields \(connection.dialect.fieldsType.rawValue) NOT NULL)")
                try await connection.insertRows(into: "documents", columns: [StoreColumn("id", .integer), StoreColumn("fields", connection.dialect.fieldsType)],
                                                rows: [[.int(1), connection.dialect.jsonValue(json)]])
                return try await connection.first("SELECT fields FROM documents WHERE id = 1")!.blob(0)
            }
        }
        XCTAssertEqual(read, json)
        XCTAssertEqual(driver.dialect.fieldsType, driver.dialect.kind == .postgres ? .text : .blob)
    }

    func testForUpdateOfLocksOnlyOnPostgreSQLAndKeepsTheJoinsRows() throws {
        let dialect = driver.dialect
        XCTAssertEqual(dialect.forUpdate(of: "a", "b"), dialect.kind == .postgres ? " FOR UPDATE OF a, b" : "")
        let joined = try run { driver in
            try await driver.write { connection -> [Int64] in
                try await connection.insertRows(into: "scratch", columns: [StoreColumn("id", .integer), StoreColumn("name", .text)],
                                                rows: [[.int(1), .text("a")], [.int(2), .text("b")]])
                return try await connection.rows("SELECT s.id FROM scratch s JOIN scratch t ON t.id = s.id WHERE s.name = ?"
                                                    + connection.dialect.forUpdate(of: "s"), [.text("b")]).map { $0.int(0) }
            }
        }
        XCTAssertEqual(joined, [2])
    }

    func testATransactionLockIsHeldUntilTheTransactionEndsOnPostgreSQLOnly() throws {
        guard let lock = driver.dialect.transactionLock(namespace: 7) else {
            XCTAssertEqual(driver.dialect.kind, .sqlite, "SQLite's single writer needs no lock")
            return
        }
        let advisoryLocks = "SELECT COUNT(*) FROM pg_locks WHERE locktype = 'advisory' AND pid = pg_backend_pid()"
        let held = try run { driver in
            try await driver.write { connection -> Int64 in
                try await connection.execute(lock, [.text("iCloud.example")])
                return try await connection.scalarInt(advisoryLocks) ?? 0
            }
        }
        XCTAssertEqual(held, 1)
        XCTAssertEqual(try run { driver in try await driver.write { try await $0.scalarInt(advisoryLocks) ?? 0 } }, 0, "released at commit")
    }

    /// Reads and writes run on the store's own threads; only a read by key may run on its
    /// caller's thread (`SQLiteInlineReadTests`).
    func testSQLiteScriptsRunOnTheStoresOwnThreads() throws {
        guard sqliteDriver != nil else { throw XCTSkip("PostgreSQL's driver does not block") }
        let threads = try run { driver in
            let read = try await driver.read { _ in currentThreadName() }
            let statement = try await driver.readStatement { _ in currentThreadName() }
            let write = try await driver.write { _ in currentThreadName() }
            return [read, statement, write]
        }
        for name in threads { XCTAssertTrue(name.hasPrefix("TP-"), "\(name) is a thread of the store's pools") }
    }
}

/// The name of the thread running the caller.
private func currentThreadName() -> String { Thread.current.name ?? "" }

/// The answers of concurrent writes, in any order.
private final class Outcomes: Sendable {
    private let values = Mutex<[String]>([])

    func add(_ value: String) { values.withLock { $0.append(value) } }

    var sorted: [String] { values.withLock { $0.sorted() } }
}
