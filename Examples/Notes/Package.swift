// swift-tools-version:6.1
import PackageDescription

// A notes app on RecordSync: two entity types of its own (folders and notes) synced through
// scorebookd. It depends on the sync layer by path and imports only its RecordSync product,
// so building it builds the layer alone (no daemon, no PostgreSQL: `traits: []`).
let package = Package(
    name: "Notes",
    products: [
        .executable(name: "notes", targets: ["notes"]),
    ],
    dependencies: [
        .package(name: "scorebook-sync", path: "../..", traits: []),
    ],
    targets: [
        // The entity types: what an app writes to sync its own data.
        .target(name: "NotesKit", dependencies: [.product(name: "RecordSync", package: "scorebook-sync")]),
        // A tiny command-line front end.
        .executableTarget(name: "notes", dependencies: ["NotesKit"]),
        // Two machines (two stores) through a real scorebookd ($SCOREBOOKD).
        .testTarget(name: "NotesTests", dependencies: ["NotesKit"]),
    ]
)
