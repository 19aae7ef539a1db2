import Foundation
import RecordModel
import TestSupport
import XCTest

/// The public database and server-to-server keys on a daemon serving PostgreSQL (`serve
/// --database`, `key add --database`): the same test bodies as on SQLite, inherited (this
/// toolchain's test discovery runs a subclass's inherited test methods: each shows under the
/// Postgres… class name in the log).
final class PostgresPublicDatabaseAPITests: PublicDatabaseAPITests {
    private static var postgresDaemon: DaemonProcess?

    override var daemon: DaemonProcess {
        get throws {
            if let running = Self.postgresDaemon { return running }
            if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
            let started = try DaemonProcess.start(postgresURL: try PostgresTestCluster.shared().createDatabase())
            Self.postgresDaemon = started
            return started
        }
    }

    override class func tearDown() {
        if let daemon = postgresDaemon {
            postgresDaemon = nil
            do { try daemon.stop() } catch { XCTFail("the PostgreSQL daemon did not stop cleanly: \(error)") }
        }
        super.tearDown()
    }

    /// The inherited bodies really run against a daemon on PostgreSQL.
    func testTheStoreIsPostgreSQL() throws {
        XCTAssertEqual(try daemon.storeArguments.first, "--database")
    }
}

final class PostgresServerKeyAPITests: ServerKeyAPITests {
    private static var postgresDaemon: DaemonProcess?

    override var daemon: DaemonProcess {
        get throws {
            if let running = Self.postgresDaemon { return running }
            if PostgresTestCluster.skipRequested { throw XCTSkip("SCOREBOOK_SKIP_POSTGRES_TESTS is set") }
            let started = try DaemonProcess.start(postgresURL: try PostgresTestCluster.shared().createDatabase())
            Self.postgresDaemon = started
            return started
        }
    }

    override class func tearDown() {
        if let daemon = postgresDaemon {
            postgresDaemon = nil
            do { try daemon.stop() } catch { XCTFail("the PostgreSQL daemon did not stop cleanly: \(error)") }
        }
        super.tearDown()
    }

    /// The inherited bodies really run `key add --database` against a daemon on PostgreSQL.
    func testTheStoreIsPostgreSQL() throws {
        XCTAssertEqual(try daemon.storeArguments.first, "--database")
    }
}
