import Foundation
import RecordModel
import RecordServer
import RecordStore
import SQLiteRecordStore
import Scorebook
import XCTest

/// One real store behind `RecordAPI` in process, and fault-free machines syncing to it, in a
/// temporary directory: the setting of the one-exchange tests. `close()` (deferred by each test,
/// which also keeps the testbed alive to the test's end) removes it all.
final class SyncTestbed {
    let root: URL
    let server: SQLiteRecordStore
    /// The async store the API serves from `server`.
    let storage: SQLiteStorage
    let api: InProcessTransport
    let token: String
    let clock = EditClock()
    let log = EditLog()

    static let noFaults = FaultRates(requestLost: 0, responseLost: 0, duplicated: 0, throttled: 0, tryAgainLater: 0, pollDelayed: 0,
                                     pollReordered: 0)

    init(user: String) async throws {
        root = FaultScenario.temporaryRoot()
        server = try SQLiteRecordStore(directory: root.appendingPathComponent("server").path)
        storage = SQLiteStorage(server)
        api = InProcessTransport(api: RecordAPI(store: storage, requestsPerSecond: 1_000_000, logger: FaultScenario.quietLogger))
        token = try await storage.createUser(name: user).token
    }

    func close() {
        server.close()
        try? FileManager.default.removeItem(at: root)
    }

    /// Machine `index` (its own store and engine), without faults until a test sets its rates.
    func machine(_ index: Int) throws -> SyncMachine {
        try SyncMachine(index: index, directory: root, api: api, token: token, seed: UInt64(index + 1), rates: Self.noFaults,
                        clock: clock, log: log)
    }

    /// The live records on the server, by name.
    func serverRecords() async throws -> [String: Record] {
        try await FaultScenario.serverRecords(api, token: token)
    }
}

extension SyncTestbed {
    /// Machines 0 and 1, each synced once, and a Person created on machine 0 but not yet sent.
    func pairWithUnsentPerson() async throws -> (a: SyncMachine, b: SyncMachine, person: Person) {
        let a = try machine(0)
        let b = try machine(1)
        try await a.engine.sync()
        try await b.engine.sync()
        let person = Person(firstName: "Ann", modificationDate: clock.now())
        try a.create([person], requiring: [])
        return (a, b, person)
    }

    /// A Person created on the first machine and synced to every one of them, in order.
    func sharedPerson(on machines: [SyncMachine]) async throws -> Person {
        let person = Person(firstName: "Ann", modificationDate: clock.now())
        try machines[0].create([person], requiring: [])
        for machine in machines { try await machine.engine.sync() }
        return person
    }
}

extension SyncMachine {
    /// Syncs while every request of this machine meets `fault`; the sync must fail (`failure`
    /// otherwise). The fault's rate is back to 0 afterwards.
    func syncFailing(under fault: WritableKeyPath<FaultRates, Double>, _ failure: String,
                     file: StaticString = #filePath, line: UInt = #line) async
    {
        transport.rates[keyPath: fault] = 1
        defer { transport.rates[keyPath: fault] = 0 }
        do {
            try await engine.sync()
            XCTFail(failure, file: file, line: line)
        } catch {}
    }
}
