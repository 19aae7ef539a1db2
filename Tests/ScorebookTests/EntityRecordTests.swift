import Foundation
import RecordModel
@testable import Scorebook
import XCTest

final class EntityRecordTests: XCTestCase {
    let date = Date(timeIntervalSince1970: 1_763_800_000.123)

    func roundTrip<E: CloudKitCompatible & Equatable>(_ entity: E, file: StaticString = #filePath, line: UInt = #line) throws {
        let record = entity.record(in: Scorebook.zoneID)
        XCTAssertEqual(record.recordType, E.recordType, file: file, line: line)
        XCTAssertEqual(record.zoneID, Scorebook.zoneID, file: file, line: line)
        XCTAssertNotNil(record.fields["modificationDate"], file: file, line: line)
        // Through the wire format and back.
        let wire = try Record(responseJSON: try JSONValue.parse(record.json().serializedString()))
        XCTAssertEqual(try E(record: wire), entity, file: file, line: line)
        XCTAssertTrue(Set(record.fields.keys).isSubset(of: E.fieldNames), file: file, line: line)
    }

    func testEveryEntityRoundTripsThroughItsRecord() throws {
        try roundTrip(Person(firstName: "Ann", lastName: "Lee", emailAddress: "ann@example.com", modificationDate: date))
        try roundTrip(Person(firstName: "Bob", modificationDate: date))
        try roundTrip(Game(name: "Golf", lowScoreWins: true, modificationDate: date))
        try roundTrip(Match(game: Game.newRecordName(), startDate: date, endDate: date.addingTimeInterval(60), notes: "close",
                            modificationDate: date))
        try roundTrip(Player(match: Match.newRecordName(), person: Person.newRecordName(), seat: 2, modificationDate: date))
        try roundTrip(Score(player: Player.newRecordName(), value: -2.5, round: 3, modificationDate: date))
        try roundTrip(MatchImage(match: Match.newRecordName(), modificationDate: date))
        try roundTrip(MatchLocation(match: Match.newRecordName(), name: "Home", latitude: 47.6, longitude: -122.3, modificationDate: date))
    }

    func testRecordNamesCarryTheTypeAndAnUppercaseUUID() {
        for type in Scorebook.entityTypes {
            let name = type.newRecordName()
            XCTAssertTrue(name.hasPrefix("\(type.recordType)|~|"))
            let uuid = String(name.dropFirst(type.recordType.count + 3))
            XCTAssertNotNil(UUID(uuidString: uuid))
            XCTAssertEqual(uuid, uuid.uppercased())
        }
    }

    func testReferencesFollowTheDeleteSelfGraphOfTheSchema() {
        let player = Player(match: "Match|~|M", person: "Person|~|P", seat: 1).record(in: Scorebook.zoneID)
        XCTAssertEqual(Set(player.references.map(\.reference)), [
            Reference(recordName: "Match|~|M", action: .deleteSelf), Reference(recordName: "Person|~|P", action: .deleteSelf),
        ])
        let match = Match(game: "Game|~|G", startDate: date).record(in: Scorebook.zoneID)
        XCTAssertEqual(match.references.map(\.reference), [Reference(recordName: "Game|~|G", action: .deleteSelf)])
    }

    func testEntityJSONUsesCamelCaseFieldsAndReferenceNames() throws {
        let match = Match(recordName: "Match|~|M", game: "Game|~|G", startDate: date, modificationDate: date)
        guard case .object(let members) = match.json else { return XCTFail("an object") }
        XCTAssertEqual(members["recordName"], "Match|~|M")
        XCTAssertEqual(members["recordType"], "Match")
        XCTAssertEqual(members["game"], "Game|~|G")
        XCTAssertEqual(members["endDate"], .null)
        XCTAssertEqual(members["modificationDate"], .string("2025-11-22T08:26:40.123Z"))
    }

    /// The schema: MatchLocation has `location LOCATION`, so its entity JSON has a `location`
    /// object, not top-level coordinates.
    func testMatchLocationJSONCarriesItsLocationAsOneObject() throws {
        let place = MatchLocation(recordName: "MatchLocation|~|L", match: "Match|~|M", name: "Home", latitude: 47.6,
                                  longitude: -122.3, modificationDate: date)
        guard case .object(let members) = place.json else { return XCTFail("an object") }
        XCTAssertEqual(Set(members.keys), ["recordName", "recordType", "match", "name", "location", "modificationDate"])
        XCTAssertEqual(members["location"], ["latitude": 47.6, "longitude": -122.3])
        XCTAssertEqual(members["match"], "Match|~|M")
        XCTAssertEqual(JSONText.render(try XCTUnwrap(members["location"])), #"{"latitude":47.6,"longitude":-122.3}"#)
        let unknown = MatchLocation(recordName: "MatchLocation|~|U", match: "Match|~|M", modificationDate: date)
        XCTAssertEqual(unknown.json["location"], .null)
        XCTAssertNil(unknown.json["latitude"])
        // Every entity's JSON names exactly its schema's fields.
        for entity: any CloudKitCompatible in [place, Game(name: "Go"), Person(firstName: "Ann"), Score(player: "Player|~|P", value: 1)] {
            guard case .object(let members) = entity.json else { return XCTFail("an object") }
            XCTAssertEqual(Set(members.keys).subtracting(["recordName", "recordType"]), Set(type(of: entity).fieldNames),
                           type(of: entity).recordType)
        }
    }

    func testAClearedOptionalFieldIsRemovedOnSave() {
        let person = Person(firstName: "Ann")
        let record = Scorebook.localRecord(of: person)
        XCTAssertEqual(record.removedFieldNames, ["lastName", "emailAddress", "avatar"])
    }

    func testAWrongRecordTypeIsRefused() {
        let record = Game(name: "Catan").record(in: Scorebook.zoneID)
        XCTAssertThrowsError(try Person(record: record))
    }
}
