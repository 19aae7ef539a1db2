import Foundation
import RecordModel
import XCTest

/// The checks the CLI end-to-end tests end with (`assertStore`) catch what they claim to: a
/// record missing, a field differing, a local orphan, and a deleted record on the server.
final class CLIStoreCheckTests: XCTestCase {
    func testTheStoreCheckFindsMissingRecordsDifferingFieldsAndLocalOrphans() throws {
        let daemon = try DaemonProcess.start()
        defer { try? daemon.stop() }
        let token = try daemon.createUser("alice")
        let (laptop, phone) = (CLIMachine("laptop"), CLIMachine("phone"))
        for machine in [laptop, phone] { try machine.login(daemon, token: token) }
        try laptop.run("game", "add", "Golf", "--low-score-wins")
        try laptop.run("person", "add", "Ann", "Lee")
        try laptop.run("person", "add", "Bob")
        try laptop.run("person", "add", "Cy")
        let match = try laptop.create("match", "start", "--game", "Golf", "--players", "Ann,Bob,Cy")
        try laptop.run("score", "add", "--match", match, "--player", "Ann", "4.5", "--round", "2")
        try laptop.run("match", "finish", match)
        try laptop.run("person", "delete", "Cy", "--yes")
        try laptop.sync()
        try phone.sync()

        // A deleted record is gone from the server's view, not kept as a null entry.
        let server = try ServerZone(daemon: daemon, token: token)
        XCTAssertFalse(server.records.values.contains(.null))
        XCTAssertEqual(server.names(ofType: "Person").count, 2)
        XCTAssertEqual(server.records.count, 7, "a game, two people, a match, two players, a score")
        try assertStore(phone, equals: server, "phone")
        XCTAssertEqual(try storeDifferences(try phone.storedRecords(), server), [])

        // The store's records: a missing parent, and a changed value.
        var records = try phone.storedRecords()
        let game = try XCTUnwrap(records.values.first { $0.recordType == "Game" }).recordName
        records[game] = nil
        var problems = try storeDifferences(records, server)
        XCTAssertTrue(problems.contains("the store lacks [\"\(game)\"], which the server holds"), "\(problems)")
        XCTAssertTrue(problems.contains("local orphan \(match): its game \(game) is not in the store"), "\(problems)")
        records = try phone.storedRecords()
        let score = try XCTUnwrap(records.values.first { $0.recordType == "Score" })
        records[score.recordName]?.fields["value"] = .double(5)
        problems = try storeDifferences(records, server)
        XCTAssertEqual(problems.count, 1, "\(problems)")
        XCTAssertTrue(problems.first?.hasPrefix("\(score.recordName).value is") ?? false, "\(problems)")

        // What the CLI shows: every field, by its type.
        let golf = try XCTUnwrap(try phone.json("game", "list").arrayValue?.first)
        let record = try XCTUnwrap(server.records[game])
        XCTAssertEqual(entityDifferences(golf, record), [])
        for (field, value) in [("lowScoreWins", JSONValue.bool(false)), ("name", "Golf "), ("modificationDate", "2026-01-01T00:00:00.000Z")] {
            guard case .object(var members) = golf else { return XCTFail("an object") }
            members[field] = value
            XCTAssertEqual(entityDifferences(.object(members), record).count, 1, field)
        }
        guard case .object(var members) = golf else { return XCTFail("an object") }
        members["name"] = nil
        XCTAssertEqual(entityDifferences(.object(members), record).count, 1, "a field the CLI leaves out")
        let ann = try XCTUnwrap(try phone.json("person", "list").arrayValue?.first { $0["firstName"] == "Ann" })
        let annRecord = try XCTUnwrap(server.records[ann["recordName"]?.stringValue ?? ""])
        XCTAssertEqual(entityDifferences(ann, annRecord), [])
        guard case .object(var annMembers) = ann else { return XCTFail("an object") }
        annMembers["lastName"] = .null
        XCTAssertEqual(entityDifferences(.object(annMembers), annRecord).count, 1)
        let shownMatch = try XCTUnwrap(try phone.json("match", "list").arrayValue?.first)
        XCTAssertEqual(entityDifferences(shownMatch, try XCTUnwrap(server.records[match])), [])
    }
}
