import Foundation
import RecordModel
import RecordStore
import SQLiteRecordStore
import RecordServer
import SQLiteDB
import XCTest

/// The store's part of assets on the selected backend: upload URLs spent once and
/// expiring, bytes stored once per scope and read back in pieces, and the sweep's lifetimes —
/// unattached bytes go after a day, released ones after the tombstone retention.
final class AssetStoreTests: StoreTestCase {
    var assetScope: AssetScope { AssetScope(dev, zone: .default) }

    /// An upload URL for `recordName.avatar`, claimed, with `bytes` stored under it; returns its receipt.
    @discardableResult
    func storeUpload(_ bytes: [UInt8], recordName: String = "p1") throws -> (receipt: String, checksum: String) {
        let binding = AssetBinding(database: .private, zoneName: ZoneID.defaultZoneName, recordName: recordName, fieldName: "avatar")
        let id = RandomToken.hex(bytes: 16)
        let upload = AssetUpload(id: id, userID: alice.id, scopeKey: assetScope.key, bindingKey: binding.key, createdAt: clock.now)
        try store.wait { try await $0.createAssetUploads([upload]) }
        let claimed = try store.wait { try await $0.claimAssetUpload(id: id, createdAfter: 0) }
        XCTAssertEqual(claimed?.bindingKey, binding.key)
        let staging = try store.wait { try $0.assetStagingDirectory() }
        let path = (staging as NSString).appendingPathComponent(id)
        XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data(bytes)))
        var digest = AssetDigest()
        bytes.withUnsafeBytes { digest.update($0) }
        let checksum = digest.finish()
        let receipt = RandomToken.hex(bytes: 16)
        let scopeKey = assetScope.key
        try store.wait { try await $0.completeAssetUpload(id: id, blob: AssetBlob(scopeKey: scopeKey, checksum: checksum,
                                                                                      size: Int64(bytes.count)), stagedFile: path, receipt: receipt) }
        return (receipt, checksum)
    }

    func blob(_ checksum: String) throws -> AssetBlob? {
        let key = assetScope.key
        return try store.wait { try await $0.assetBlob(scopeKey: key, checksum: checksum) }
    }

    func sweep(retentionDays: Int64 = 30) throws -> Int {
        try store.wait { try await $0.sweepAssets(releasedMilliseconds: retentionDays * 86_400_000) }
    }

    func avatarRecord(_ name: String, checksum: String, size: Int) -> JSONValue {
        record(name, "Person", ["avatar": field(["fileChecksum": .string(AssetChecksum.wire(hex: checksum)), "size": .int(Int64(size))], "ASSETID")])
    }

    func testAnUploadURLIsSpentOnceAndExpires() throws {
        let fresh = AssetUpload(id: "fresh-upload", userID: alice.id, scopeKey: assetScope.key, bindingKey: "b", createdAt: clock.now)
        let stale = AssetUpload(id: "stale-upload", userID: alice.id, scopeKey: assetScope.key, bindingKey: "b",
                                createdAt: clock.now - AssetLimits.uploadURLMilliseconds - 1)
        try store.wait { try await $0.createAssetUploads([fresh, stale]) }
        let validSince = clock.now - AssetLimits.uploadURLMilliseconds
        XCTAssertNotNil(try store.wait { try await $0.claimAssetUpload(id: "fresh-upload", createdAfter: validSince) })
        XCTAssertNil(try store.wait { try await $0.claimAssetUpload(id: "fresh-upload", createdAfter: validSince) }, "spent")
        XCTAssertNil(try store.wait { try await $0.claimAssetUpload(id: "stale-upload", createdAfter: validSince) }, "expired")
        XCTAssertNil(try store.wait { try await $0.claimAssetUpload(id: "unknown", createdAfter: validSince) })
    }

    func testBytesAreStoredOnceAndReadBackInPieces() throws {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<(AssetLimits.chunkBytes * 2 + 777)).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let first = try storeUpload(bytes, recordName: "p1")
        let second = try storeUpload(bytes, recordName: "p2")
        XCTAssertEqual(first.checksum, second.checksum)
        XCTAssertNotEqual(first.receipt, second.receipt)
        let stored = try XCTUnwrap(try blob(first.checksum))
        XCTAssertEqual(stored.size, Int64(bytes.count))
        // Pieces across the chunk boundaries come back exactly.
        var read: [UInt8] = []
        while read.count < bytes.count {
            let offset = Int64(read.count)
            let piece = try store.wait { try await $0.readAssetBlob(stored, offset: offset, maximumLength: 300_001) }
            XCTAssertGreaterThan(piece.readableBytes, 0)
            read += Array(buffer: piece)
        }
        XCTAssertEqual(read, bytes)
        let uploads = try store.wait { try await $0.assetUploads(receipts: [first.receipt, second.receipt, "nope"]) }
        XCTAssertEqual(Set(uploads.compactMap(\.checksum)), [first.checksum])
        XCTAssertEqual(uploads.count, 2)
        let aliceID = alice.id, scopeKey = assetScope.key
        XCTAssertTrue(try store.wait { try await $0.hasUploadedAsset(userID: aliceID, scopeKey: scopeKey, checksum: first.checksum) })
        XCTAssertFalse(try store.wait { try await $0.hasUploadedAsset(userID: aliceID + 1, scopeKey: scopeKey, checksum: first.checksum) })
    }

    func testBytesNeverAttachedGoAfterADay() throws {
        let kept = try storeUpload([1, 2, 3], recordName: "p1")
        let dropped = try storeUpload([4, 5, 6], recordName: "p2")
        try save(dev, avatarRecord("p1", checksum: kept.checksum, size: 3))
        try store.wait { try await $0.markAssetsAttached(receipts: [kept.receipt]) }
        clock.advance(milliseconds: AssetLimits.receiptMilliseconds)
        XCTAssertEqual(try sweep(), 0, "a day is not yet past the unattached lifetime")
        XCTAssertNotNil(try blob(dropped.checksum))
        clock.advance(milliseconds: AssetLimits.unattachedMilliseconds - AssetLimits.receiptMilliseconds + 1)
        XCTAssertEqual(try sweep(), 1)
        XCTAssertNil(try blob(dropped.checksum))
        XCTAssertNotNil(try blob(kept.checksum), "an attached asset stays")
        XCTAssertTrue(try store.wait { try await $0.assetUploads(receipts: [dropped.receipt]) }.isEmpty, "its receipt is gone too")
    }

    func testBytesNoRecordRefersToGoAfterTheRetention() throws {
        let asset = try storeUpload([9, 9, 9, 9], recordName: "p1")
        let saved = try save(dev, avatarRecord("p1", checksum: asset.checksum, size: 4))
        try store.wait { try await $0.markAssetsAttached(receipts: [asset.receipt]) }
        XCTAssertEqual(try sweep(retentionDays: 2), 0)
        try modify(dev, [(.delete, record("p1", tag: saved.changeTag))])
        XCTAssertEqual(try sweep(retentionDays: 2), 0, "the first sweep after the deletion only notes it")
        clock.advance(days: 1)
        XCTAssertEqual(try sweep(retentionDays: 2), 0)
        XCTAssertNotNil(try blob(asset.checksum))
        clock.advance(days: 1)
        clock.advance(milliseconds: 1000)
        XCTAssertEqual(try sweep(retentionDays: 2), 1)
        XCTAssertNil(try blob(asset.checksum))
    }

    func testCheckFindsADamagedAssetAndBackupHoldsTheAssets() throws {
        guard Self.backend == .sqlite else { throw XCTSkip("the damaged file and the backup directory are SQLite's") }
        let sqlite = try XCTUnwrap(store.base as? SQLiteStorage).store
        let asset = try storeUpload(Array(repeating: 42, count: 1000), recordName: "p1")
        try save(dev, avatarRecord("p1", checksum: asset.checksum, size: 1000))
        XCTAssertEqual(try store.checkIntegrity(), [])

        let backup = directory.appendingPathComponent("backup.sqlite").path
        try sqlite.backup(to: backup)
        let copied = (SQLiteRecordStore.backupAssetDirectory(forBackup: backup) as NSString)
            .appendingPathComponent(assetScope.directoryName + "/" + asset.checksum)
        XCTAssertEqual(FileManager.default.contents(atPath: copied), Data(repeating: 42, count: 1000))

        let path = sqlite.assetFilePath(scopeKey: assetScope.key, checksum: asset.checksum)
        try FileManager.default.removeItem(atPath: path)  // a hard link in the backup keeps its bytes
        try Data(repeating: 43, count: 1000).write(to: URL(fileURLWithPath: path))
        let problems = try store.checkIntegrity()
        XCTAssertEqual(problems.count, 1, "\(problems)")
        XCTAssertTrue(problems.first?.contains("p1.avatar") ?? false, "\(problems)")
        XCTAssertEqual(FileManager.default.contents(atPath: copied), Data(repeating: 42, count: 1000), "the backup is unaffected")
    }

    /// Bytes gone or cut short under a record answer one error on either backend (a file, chunk rows).
    func testMissingOrShortBytesAnswerTheSameErrorOnEitherBackend() throws {
        let asset = try storeUpload(Array(repeating: 42, count: 1000), recordName: "p1")
        let stored = try XCTUnwrap(try blob(asset.checksum))
        let engine = store.base.engine
        let path = (store.base as? SQLiteStorage).map { $0.store.assetFilePath(scopeKey: assetScope.key, checksum: asset.checksum) }
        func damage(keeping count: Int?) throws {
            if let path {
                if let count { try Data(repeating: 42, count: count).write(to: URL(fileURLWithPath: path)) } else { try FileManager.default.removeItem(atPath: path) }
            } else {
                let checksum = asset.checksum
                _ = try store.wait { _ in
                    try await engine.driver.write { connection in
                        if let count {
                            try await connection.execute("UPDATE asset_chunks SET data = ? WHERE checksum = ?", [.blob(Array(repeating: 42, count: count)), .text(checksum)])
                        } else {
                            try await connection.execute("DELETE FROM asset_chunks WHERE checksum = ?", [.text(checksum)])
                        }
                    }
                }
            }
        }
        func assertMissing(_ what: String) {
            XCTAssertThrowsError(try store.wait { try await $0.readAssetBlob(stored, offset: 500, maximumLength: 1000) }, what) { error in
                XCTAssertEqual((error as? ServerError)?.code, .internalError, "\(what): \(error)")
                XCTAssertEqual((error as? ServerError)?.reason, AssetLimits.missingBytes().reason, what)
            }
        }
        try damage(keeping: 100)
        assertMissing("bytes cut short")
        try damage(keeping: nil)
        assertMissing("bytes gone")
    }

    /// The check reads the bytes wherever the backend keeps them (a file, chunk rows) and holds
    /// both backends to the same invariants: damaged bytes and records left in a deleted zone are
    /// found on either.
    func testCheckFindsDamagedBytesAndRecordsOfADeletedZoneOnEitherBackend() throws {
        let asset = try storeUpload(Array(repeating: 42, count: 1000), recordName: "p1")
        try save(dev, avatarRecord("p1", checksum: asset.checksum, size: 1000))
        XCTAssertEqual(try store.checkIntegrity(), [])
        let engine = store.base.engine
        if let sqlite = (store.base as? SQLiteStorage)?.store {
            try Data(repeating: 43, count: 1000).write(to: URL(fileURLWithPath: sqlite.assetFilePath(scopeKey: assetScope.key, checksum: asset.checksum)))
        } else {
            let checksum = asset.checksum
            _ = try store.wait { _ in
                try await engine.driver.write { connection in
                    try await connection.execute("UPDATE asset_chunks SET data = ? WHERE checksum = ?", [.blob(Array(repeating: 43, count: 1000)), .text(checksum)])
                }
            }
        }
        var problems = try store.checkIntegrity()
        XCTAssertEqual(problems.count, 1, "\(problems)")
        XCTAssertTrue(problems.first?.contains("p1.avatar") ?? false, "\(problems)")

        _ = try store.createZone(dev, zoneName: "Left")
        try save(dev, zone: ZoneID(zoneName: "Left"), record("g1", "Game", ["name": field("Catan")]))
        _ = try store.wait { _ in
            try await engine.driver.write { connection in try await connection.execute("UPDATE zones SET deleted = 1 WHERE name = 'Left'") }
        }
        problems = try store.checkIntegrity()
        XCTAssertTrue(problems.contains("1 records belong to no live zone"), "\(problems)")
    }

    /// A receipt older than a day is refused by the API (the test clock runs a year behind the
    /// wall clock the API checks receipts against, so the store's upload is long expired), and one
    /// just issued is taken.
    func testTheAPIRefusesAnExpiredReceipt() throws {
        let token = try store.createUser(name: "carol").token
        let carol = try XCTUnwrap(try store.listUsers().first { $0.name == "carol" })
        let api = RecordAPI(store: store.base)
        let scope = DatabaseScope(user: carol, container: Self.container, environment: .development)
        let binding = AssetBinding(database: .private, zoneName: ZoneID.defaultZoneName, recordName: "p1", fieldName: "avatar")
        let staging = try store.wait { try $0.assetStagingDirectory() }
        func upload(uploadedAt clockNow: Int64?) throws -> String {
            let id = RandomToken.hex(bytes: 16)
            let assetScope = AssetScope(scope, zone: .default)
            try store.wait { try await $0.createAssetUploads([AssetUpload(id: id, userID: carol.id, scopeKey: assetScope.key,
                                                                           bindingKey: binding.key, createdAt: 0)]) }
            _ = try store.wait { try await $0.claimAssetUpload(id: id, createdAfter: -1) }
            let path = (staging as NSString).appendingPathComponent(id)
            XCTAssertTrue(FileManager.default.createFile(atPath: path, contents: Data([1, 2, 3])))
            var digest = AssetDigest()
            [UInt8]([1, 2, 3]).withUnsafeBytes { digest.update($0) }
            let receipt = RandomToken.hex(bytes: 16)
            let checksum = digest.finish()
            try store.wait { try await $0.completeAssetUpload(id: id, blob: AssetBlob(scopeKey: assetScope.key, checksum: checksum, size: 3),
                                                              stagedFile: path, receipt: receipt) }
            return receipt
        }
        @Sendable func save(receipt: String) async -> JSONValue {
            let body: JSONValue = ["operations": [["operationType": "forceReplace", "record": [
                "recordName": "p1", "recordType": "Person", "fields": ["avatar": ["type": "ASSETID", "value": ["receipt": .string(receipt)]]],
            ]]]]
            let answer = try? await InProcessResponder(api: api).respond(
                method: "POST", uri: "/database/1/\(Self.container)/development/private/records/modify",
                headers: [("Authorization", "Bearer \(token)")], body: body.serialized())
            return (try? JSONValue.parse(answer?.body ?? [])["records"]?.arrayValue?.first) ?? .null
        }
        let expired = try upload(uploadedAt: nil)
        let refused = try BlockingStore.run { await save(receipt: expired) }
        XCTAssertEqual(refused["serverErrorCode"], "BAD_REQUEST", "\(refused)")
        XCTAssertTrue(refused["reason"]?.stringValue?.contains("expired") ?? false, "\(refused)")
        // The same store with its clock at the wall clock's time: a fresh receipt is taken.
        clock.advance(milliseconds: Int64(Date().timeIntervalSince1970 * 1000) - clock.now)
        let fresh = try upload(uploadedAt: nil)
        let taken = try BlockingStore.run { await save(receipt: fresh) }
        XCTAssertNil(taken["serverErrorCode"], "\(taken)")
        XCTAssertEqual(taken["fields"]?["avatar"]?["value"]?["size"], 3)
    }
}
