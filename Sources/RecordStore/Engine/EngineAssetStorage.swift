import RecordModel

/// A store whose assets' bookkeeping and integrity check are the engine's scripts, over the
/// backend's own place for the bytes: both backends conform.
package protocol EngineAssetStorage {
    var engine: StoreEngine { get }
    /// Where this backend keeps the assets' bytes.
    var assetBytes: any AssetByteStore { get }
}

extension EngineAssetStorage {
    package func assetSigningSecret() async throws -> [UInt8] { try await engine.assetSigningSecret() }
    package func createAssetUploads(_ uploads: [AssetUpload]) async throws { try await engine.createAssetUploads(uploads) }

    package func claimAssetUpload(id: String, createdAfter: Int64) async throws -> AssetUpload? {
        try await engine.claimAssetUpload(id: id, createdAfter: createdAfter)
    }

    package func completeAssetUpload(id: String, blob: AssetBlob, stagedFile path: String, receipt: String) async throws {
        try await engine.completeAssetUpload(id: id, blob: blob, stagedFile: path, receipt: receipt, bytes: assetBytes)
    }

    package func assetUploads(receipts: [String]) async throws -> [AssetUpload] { try await engine.assetUploads(receipts: receipts) }

    package func hasUploadedAsset(userID: Int64, scopeKey: String, checksum: String) async throws -> Bool {
        try await engine.hasUploadedAsset(userID: userID, scopeKey: scopeKey, checksum: checksum)
    }

    package func markAssetsAttached(receipts: [String]) async throws { try await engine.markAssetsAttached(receipts: receipts) }

    package func assetBlob(scopeKey: String, checksum: String) async throws -> AssetBlob? {
        try await engine.assetBlob(scopeKey: scopeKey, checksum: checksum)
    }

    package func sweepAssets(releasedMilliseconds: Int64) async throws -> Int {
        try await engine.sweepAssets(releasedMilliseconds: releasedMilliseconds, bytes: assetBytes)
    }

    package func checkIntegrity() async throws -> [String] { try await engine.checkIntegrity(bytes: assetBytes) }
}
