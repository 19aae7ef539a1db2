import Foundation
import RecordModel
import Synchronization
import TestSupport
import XCTest

/// The public database and server-to-server keys on a daemon serving PostgreSQL (`serve
/// --database`, `key add --database`): the same test bodies as on SQLite, inherited (this
/// toolchain's test discovery runs a subclass's inherited test methods: each shows under the
/// Postgres… class name in the log).
/// One daemon on a fresh PostgreSQL database for a test class, started at first use and
/// stopped when the class ends.
final class PostgresDaemonForClass: Sendable {
    private let running = Mutex<DaemonProcess?>(nil)

    func daemon() throws -> DaemonProcess {
        try running.withLock { running in
            if let running { return running }
            if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
            let started = try DaemonProcess.start(postgresURL: try PostgresTestCluster.shared().createDatabase())
            running = started
            return started
        }
    }

    func stop() {
        guard let daemon = running.withLock({ running in defer { running = nil }; return running }) else { return }
        do { try daemon.stop() } catch { XCTFail("the PostgreSQL daemon did not stop cleanly: \(error)") }
    }
}

final class PostgresPublicDatabaseAPITests: PublicDatabaseAPITests {
    private static let postgres = PostgresDaemonForClass()

    override var daemon: DaemonProcess {
        get throws { try Self.postgres.daemon() }
    }

    override class func tearDown() {
        postgres.stop()
        super.tearDown()
    }

    /// The inherited bodies really run against a daemon on PostgreSQL.
    func testTheStoreIsPostgreSQL() throws {
        XCTAssertEqual(try daemon.storeArguments.first, "--database")
    }
}

final class PostgresServerKeyAPITests: ServerKeyAPITests {
    private static let postgres = PostgresDaemonForClass()

    override var daemon: DaemonProcess {
        get throws { try Self.postgres.daemon() }
    }

    override class func tearDown() {
        postgres.stop()
        super.tearDown()
    }

    /// The inherited bodies really run `key add --database` against a daemon on PostgreSQL.
    func testTheStoreIsPostgreSQL() throws {
        XCTAssertEqual(try daemon.storeArguments.first, "--database")
    }
}
