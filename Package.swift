// swift-tools-version:6.1
import PackageDescription

// Modules are split by role (docs/architecture.md draws the graph): the CLI side (RecordClient, SyncEngine, Scorebook,
// `scorebook`) never compiles the server's HTTP stack, and RecordModel imports nothing of ours.
// Every target compiles in the Swift 6 language mode (the default for tools-version 6): data-race safety is
// checked by the compiler, not by review.
let package = Package(
    name: "scorebook-sync",
    // Linux only (no `platforms:`): the code calls Linux interfaces (inotify, glibc's mallopt, /proc)
    // and is built and tested on Debian alone; nothing here can build or test it on macOS, so the
    // package does not claim it.
    products: [
        .executable(name: "scorebookd", targets: ["scorebookd"]),
        .executable(name: "scorebook", targets: ["scorebook"]),
        // The sync layer as a library: any Swift program syncs its own types through scorebookd
        // (Examples/Notes is one). RecordSync is the generic layer (record model, client, local
        // store, sync engine, the entity protocol); ScorebookKit is the scorekeeping domain on it.
        // Neither pulls in the daemon, its HTTP stack or PostgreSQL.
        .library(name: "RecordSync", targets: ["RecordSync"]),
        .library(name: "ScorebookKit", targets: ["ScorebookKit"]),
    ],
    // `PostgreSQL` (on by default) builds the daemon's PostgreSQL backend and postgres-nio; an
    // SQLite-only daemon is `swift build --product scorebookd --disable-default-traits`.
    traits: [
        .trait(name: "PostgreSQL", description: "scorebookd serves a PostgreSQL store (--database); pulls in postgres-nio."),
        .default(enabledTraits: ["PostgreSQL"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird", from: "2.28.1", traits: []),
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        // Already in Hummingbird's graph; named so the daemon can set shutdown and logging policy.
        .package(url: "https://github.com/swift-server/swift-service-lifecycle", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        // Already in Hummingbird's graph; named for NIOThreadPool, where the SQLite store blocks.
        .package(url: "https://github.com/apple/swift-nio", from: "2.101.0"),
        // The PostgreSQL backend only; nothing on the CLI side links it.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        // Already in postgres-nio's graph; named for the TLS context of the store's own connections.
        .package(url: "https://github.com/apple/swift-nio-ssl", from: "2.37.6"),
        // ECDSA P-256 for server-to-server keys and SHA-256 for token hashes; already in postgres-nio's
        // graph. Server modules only: the CLI (RecordModel and below) does not compile BoringSSL.
        .package(url: "https://github.com/apple/swift-crypto", from: "4.5.2"),
        // Streaming multipart/form-data parsing for asset uploads (browsers and OpenCloudKit send them so).
        .package(url: "https://github.com/vapor/multipart-kit", from: "4.7.1"),
        // bcrypt for web sign-in passwords (only its HummingbirdBcrypt product is used).
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth", from: "2.5.0"),
        // Streaming gunzip of the daemon's gzip request bodies (zlib); the CLI uses zlib directly (CZlib).
        .package(url: "https://github.com/adam-fowler/compress-nio", from: "1.5.0"),
    ],
    targets: [
        .systemLibrary(name: "CSQLite", providers: [.apt(["libsqlite3-dev"])]),
        // zlib for the CLI's gzip (answers it reads, large batches it sends), without the server's NIO stack.
        .systemLibrary(name: "CZlib", providers: [.apt(["zlib1g-dev"])]),
        // The daemon's gzip answers, each compressed whole (an answer is one buffer): about half
        // zlib's CPU at its fastest level, and no stream to set up for each answer.
        .systemLibrary(name: "CLibdeflate", providers: [.apt(["libdeflate-dev"])]),
        .target(name: "SQLiteDB", dependencies: ["CSQLite"]),
        // glibc's allocator settings for the daemon (`mallopt`; the header only, glibc is always linked).
        .systemLibrary(name: "CMalloc"),
        .target(name: "RecordModel"),
        // The store's types, rules and engine over a driver protocol: neither database's own code.
        .target(
            name: "RecordStore",
            dependencies: [
                "RecordModel", .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOFoundationCompat", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]),
        // The SQLite backend of `RecordStorage`: the driver, the group-commit writer, the asset files, backups.
        .target(
            name: "SQLiteRecordStore",
            dependencies: [
                "RecordModel", "RecordStore", "SQLiteDB", .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // The PostgreSQL backend of `RecordStorage`: only scorebookd and the tests depend on it.
        .target(
            name: "PostgresRecordStore",
            dependencies: [
                "RecordModel", "RecordStore", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]),
        .target(
            name: "RecordServer",
            dependencies: [
                "RecordModel", "RecordStore", "CMalloc", "CLibdeflate", .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "CompressNIO", package: "compress-nio"),
                // Webhook deliveries: an HTTP/1.1 client on the NIO stack Hummingbird already runs on (TLS for https targets).
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"), .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            // The console's files, compiled into the daemon as bytes (`PackageResources`): one
            // binary, no resource bundle to find at run time.
            resources: [
                .embedInCode("Console/index.html"), .embedInCode("Console/console.css"),
                .embedInCode("Console/scoreboard.js"), .embedInCode("Console/console.js"), .embedInCode("Console/share.js"),
            ]),
        // libcurl's header only: CCurl loads the library with dlopen for HTTPS (see SocketTransport).
        .target(name: "CCurl"),
        .target(name: "RecordClient", dependencies: ["RecordModel", "CCurl", "CZlib"]),
        .target(name: "SyncEngine", dependencies: ["RecordModel", "RecordClient", "SQLiteDB"]),
        // The typed face of the layer: entities, `SyncStore`, events. Re-exports RecordModel.
        .target(name: "RecordSync", dependencies: ["RecordModel", "RecordClient", "SyncEngine"]),
        .target(name: "ScorebookKit", dependencies: ["RecordSync", "SyncEngine"]),
        // The CLI's own code (display names, REF resolution, --json shapes, tables, commands'
        // logic) and the executable: `packageAccess: false` keeps `package` symbols of the
        // library modules out of their reach, so the compiler proves the CLI is built from the
        // products' public API alone (scripts/check-public-api.sh checks the rest).
        .target(
            name: "Scorebook", dependencies: ["ScorebookKit", "RecordSync", "RecordModel", "RecordClient", "SyncEngine", "SQLiteDB"],
            packageAccess: false),
        .executableTarget(
            name: "scorebookd",
            dependencies: [
                "RecordServer", "RecordStore", "SQLiteRecordStore", .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .target(name: "PostgresRecordStore", condition: .when(traits: ["PostgreSQL"])),
            ]),
        .executableTarget(
            name: "scorebook",
            dependencies: ["Scorebook", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            packageAccess: false),
        // The bench: no declared product, so nothing outside this package can depend on it; SwiftPM
        // still builds it with the package (an executable of the root package), or alone with
        // `swift build -c release --product scorebook-bench` (BENCHMARKS.md).
        .executableTarget(
            name: "scorebook-bench",
            dependencies: [
                "RecordServer", "RecordStore", "SQLiteRecordStore", "RecordModel", "SQLiteDB", "CSQLite", "RecordClient", "SyncEngine", "Scorebook",
                "RecordSync", "ScorebookKit", .product(name: "Logging", package: "swift-log"),
                // The PostgreSQL scenarios: the backend, a raw postgres-nio baseline, a throw-away cluster.
                .target(name: "PostgresRecordStore", condition: .when(traits: ["PostgreSQL"])),
                .target(name: "PostgresCluster", condition: .when(traits: ["PostgreSQL"])),
                .product(name: "PostgresNIO", package: "postgres-nio", condition: .when(traits: ["PostgreSQL"])),
            ]),
        // A throw-away PostgreSQL cluster (initdb, pg_ctl on a loopback port): the tests and the bench share it.
        .target(name: "PostgresCluster"),
        // Helpers every test target shares (a seeded generator; PostgresCluster re-exported).
        .target(name: "TestSupport", dependencies: ["PostgresCluster"], path: "Tests/TestSupport"),
        .testTarget(name: "RecordModelTests", dependencies: ["RecordModel", "RecordStore", "TestSupport"]),
        .testTarget(
            name: "RecordStoreTests",
            dependencies: [
                "RecordStore", "SQLiteRecordStore", "SQLiteDB", "PostgresRecordStore", "RecordServer", "RecordModel", "TestSupport",
                .product(name: "NIOCore", package: "swift-nio"), .product(name: "NIOPosix", package: "swift-nio"),
            ]),
        // Unit tests are named after the module they test; ReliabilityTests and IntegrationTests
        // cross modules (the sync engine against a real store; the real binaries on loopback).
        .testTarget(
            name: "RecordServerTests",
            dependencies: ["RecordServer", "RecordModel", .product(name: "CompressNIO", package: "compress-nio"),
                           .product(name: "NIOCore", package: "swift-nio")]),
        // The source files' own structure (no file cycles in any module): reads Sources/, links nothing of ours.
        .testTarget(name: "SourceGraphTests"),
        .testTarget(name: "RecordClientTests", dependencies: ["RecordClient", "RecordModel", "TestSupport"]),
        .testTarget(name: "SyncEngineTests", dependencies: ["SyncEngine", "RecordClient", "RecordModel"]),
        // The typed API as an app sees it (plain `import RecordSync`); the two-machine test is Examples/Notes'.
        .testTarget(name: "RecordSyncTests", dependencies: ["RecordSync"]),
        .testTarget(name: "ScorebookTests", dependencies: ["Scorebook", "ScorebookKit", "RecordSync", "SyncEngine", "RecordClient", "RecordModel", "TestSupport"]),
        // The sync engine against a real store through a fault-injecting in-process transport.
        .testTarget(
            name: "ReliabilityTests",
            dependencies: ["RecordServer", "RecordStore", "SQLiteRecordStore", "PostgresRecordStore", "RecordModel", "RecordClient", "SyncEngine",
                           "Scorebook", "TestSupport"]),
        .testTarget(
            name: "IntegrationTests",
            dependencies: ["RecordModel", "RecordClient", "SQLiteDB", "SyncEngine", "scorebookd", "scorebook", "TestSupport"]),
    ]
)
