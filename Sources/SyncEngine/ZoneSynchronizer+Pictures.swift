import Foundation
import RecordClient
import RecordModel

/// Pictures (asset fields): uploaded just before the records that refer to
/// them are sent, and downloaded after records that refer to pictures this machine lacks arrive.
/// The outbox is untouched by uploads (a sync killed mid-upload sends the record, and uploads the
/// picture again, next time; the server keeps identical bytes once), and a download grows a
/// `.part` file in ranges, so one cut off resumes where it stopped.
extension ZoneSynchronizer {
    var pictures: PictureFiles { PictureFiles(storePath: store.path) }

    /// Ranges a download asks for: a dropped connection loses at most this much.
    static let downloadRangeBytes = 4 * 1024 * 1024

    /// The setting that says this store uploaded a picture into the book's database (the server
    /// then takes the picture by checksum without a receipt).
    func uploadedPictureKey(_ picture: PictureReference) -> String { "uploadedPicture.\(store.bookID).\(picture.checksum)" }

    /// The operations with a receipt in every asset field whose picture this store has not yet
    /// uploaded into the book's database (uploading it now).
    func uploadPictures(_ sending: [(change: PendingChange, operation: RecordOperation)], _ summary: inout SyncSummary,
                        progress: SyncProgressReporter) async throws -> [(change: PendingChange, operation: RecordOperation)]
    {
        var result = sending
        for index in result.indices where !result[index].operation.kind.isDelete {
            let record = result[index].operation.record
            for (field, value) in record.fields.sorted(by: { $0.key < $1.key }) where value.type == .asset && value.value["receipt"] == nil {
                guard let picture = PictureReference(value), try store.setting(uploadedPictureKey(picture)) == nil else { continue }
                // A picture this machine never had came from the server, which holds it in the field already.
                guard pictures.has(picture) else { continue }
                progress.picture(upload: true, bytes: 0, total: picture.size)
                let relay = UploadProgressRelay(progress, total: picture.size)
                let singleFile = try await database.uploadAsset(zoneID: zoneID, recordName: record.recordName, recordType: record.recordType,
                                                                fieldName: field, file: pictures.path(of: picture.checksum), size: picture.size,
                                                                progress: { relay.sent($0) })
                progress.picture(upload: true, bytes: picture.size, total: picture.size)
                guard PictureReference(.asset(singleFile))?.checksum == picture.checksum else {
                    throw SyncError("the server stored the picture \(picture.checksum.prefix(12)) with another checksum")
                }
                result[index].operation.record.fields[field] = .asset(singleFile)
                try guarded { try store.setSetting(uploadedPictureKey(picture), "1") }
                summary.picturesUploaded += 1
            }
        }
        return result
    }

    /// After the server refused `record` (BAD_REQUEST): forgets that this store uploaded the pictures
    /// the record went without a receipt for, and says whether there were any. The server drops
    /// bytes no record refers to any more (after the tombstone retention, or an upload never
    /// attached after 24 h), so a picture uploaded long ago may need uploading again: the change
    /// stays in the outbox and the next round uploads it with a fresh receipt.
    func forgetUploadsRefused(in record: Record) throws -> Bool {
        var forgot = false
        for value in record.fields.values where value.type == .asset && value.value["receipt"] == nil {
            guard let picture = PictureReference(value), pictures.has(picture),
                  try store.setting(uploadedPictureKey(picture)) != nil
            else { continue }
            try guarded { try store.setSetting(uploadedPictureKey(picture), nil) }
            forgot = true
        }
        return forgot
    }

    /// Downloads every picture a record of the book refers to that this machine lacks. Each
    /// download is checked against its checksum before it is kept.
    func downloadMissingPictures(_ summary: inout SyncSummary, progress: SyncProgressReporter) async throws {
        var failures: [String] = []
        for record in try store.recordsWithAssets() {
            for (field, value) in record.fields.sorted(by: { $0.key < $1.key }) {
                guard let picture = PictureReference(value), !pictures.has(picture) else { continue }
                do {
                    do {
                        guard let url = value.value["downloadURL"]?.stringValue else { throw SyncError("no download URL") }
                        try await download(picture, from: url, progress: progress)
                    } catch {
                        // The URL expired (or never came): the record, looked up again, carries a fresh one.
                        guard case .saved(let fresh)? = try await database.lookupRecords(zoneID: zoneID, recordNames: [record.recordName]).first,
                              let current = fresh.fields[field], PictureReference(current) == picture,
                              let url = current.value["downloadURL"]?.stringValue
                        else { throw error }
                        try await download(picture, from: url, progress: progress)
                    }
                    summary.picturesDownloaded += 1
                } catch let error as SyncStopped {
                    throw error
                } catch {
                    failures.append("\(record.recordName).\(field): \(Self.syncError(error).description)")
                }
            }
        }
        if let first = failures.first {
            throw SyncError("\(failures.count) picture(s) could not be downloaded (sync again to resume): \(first)")
        }
    }

    /// Fetches `picture` into the picture directory by ranges, resuming a `.part` file.
    func download(_ picture: PictureReference, from url: String, progress: SyncProgressReporter) async throws {
        let files = pictures
        try FileManager.default.createDirectory(atPath: files.directory, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
        let partial = files.partialPath(of: picture)
        if !FileManager.default.fileExists(atPath: partial) {
            _ = FileManager.default.createFile(atPath: partial, contents: nil, attributes: [.posixPermissions: 0o600])  // the open below says if it failed
        }
        guard let handle = FileHandle(forUpdatingAtPath: partial) else { throw SyncError("cannot write \(partial)") }
        defer { try? handle.close() }
        var offset = Int64(try handle.seekToEnd())
        if offset > picture.size {
            try handle.truncate(atOffset: 0)
            offset = 0
        }
        while offset < picture.size {
            progress.picture(upload: false, bytes: offset, total: picture.size)
            let length = Int(min(Int64(Self.downloadRangeBytes), picture.size - offset))
            let bytes = try await database.downloadAsset(url: url, offset: offset, length: length)
            guard !bytes.isEmpty else { throw SyncError("the server sent no bytes of the picture at \(offset)") }
            try handle.write(contentsOf: bytes)
            offset += Int64(bytes.count)
        }
        progress.picture(upload: false, bytes: picture.size, total: picture.size)
        try handle.seek(toOffset: 0)
        var hasher = SHA256Hasher()
        while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty { hasher.update(data) }
        guard SHA256Hasher.hex(hasher.finish()) == picture.checksum else {
            try? FileManager.default.removeItem(atPath: partial)
            throw SyncError("the picture \(picture.checksum.prefix(12)) arrived damaged (its checksum differs); it will be downloaded again")
        }
        try? FileManager.default.removeItem(atPath: files.path(of: picture.checksum))
        try FileManager.default.moveItem(atPath: partial, toPath: files.path(of: picture.checksum))
    }
}

/// Passes an upload's bytes sent, told on the transport's thread, to the sync's progress. The
/// sync task awaits that very upload meanwhile, so the reporter has no other user until the
/// upload returns (its last call happens before the await resumes). Unchecked `Sendable`: that
/// hand-over of a non-`Sendable` reporter, through an await, is invisible to the compiler.
private final class UploadProgressRelay: @unchecked Sendable {
    private let reporter: SyncProgressReporter
    private let total: Int64

    init(_ reporter: SyncProgressReporter, total: Int64) {
        self.reporter = reporter
        self.total = total
    }

    func sent(_ bytes: Int64) {
        // The whole body sent is not yet the upload done (its answer is still to come).
        reporter.picture(upload: true, bytes: min(bytes, total - 1), total: total)
    }
}
