import Foundation
import RecordModel

/// A picture an asset field refers to: its SHA-256 (hex, as its file is named) and size.
public struct PictureReference: Sendable, Equatable {
    public var checksum: String
    public var size: Int64

    public init(checksum: String, size: Int64) {
        self.checksum = checksum
        self.size = size
    }

    /// The picture of an asset field value (`{"fileChecksum", "size", …}`), or nil.
    public init?(_ value: FieldValue?) {
        guard let value, value.type == .asset, let wire = value.value["fileChecksum"]?.stringValue,
              let digest = Data(base64Encoded: wire), digest.count == 32
        else { return nil }
        checksum = SHA256Hasher.hex(Array(digest))
        size = value.value["size"]?.int64Value ?? 0
    }

    /// The field value a local edit saves: the checksum and size (the sync engine uploads the
    /// bytes and adds the receipt when it sends the record).
    public var fieldValue: FieldValue {
        .asset(["fileChecksum": .string(wireChecksum), "size": .int(size)])
    }

    /// `fileChecksum` on the wire: base64 of the digest.
    public var wireChecksum: String { Data(SHA256Hasher.bytes(hex: checksum) ?? []).base64EncodedString() }
}

/// The pictures of a store file, one file per picture named by its SHA-256, in `<store>.pictures/`
/// beside it: added by a command or downloaded by sync, identical pictures kept once. Files are
/// written to a temporary name and renamed, so a picture file is always whole.
public struct PictureFiles: Sendable {
    public let directory: String
    /// The largest picture (the server's asset limit).
    public static let maximumBytes: Int64 = 50 * 1024 * 1024

    public init(storePath: String) {
        directory = storePath == ":memory:" ? NSTemporaryDirectory() + "scorebook-pictures-\(getpid())" : storePath + ".pictures"
    }

    public func path(of checksum: String) -> String { (directory as NSString).appendingPathComponent(checksum) }

    public func has(_ picture: PictureReference) -> Bool {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path(of: picture.checksum)) else { return false }
        return (attributes[.size] as? Int64).map { $0 == picture.size } ?? ((attributes[.size] as? Int).map { Int64($0) == picture.size } ?? false)
    }

    /// Copies the file at `source` in (a clear error for a missing, unreadable, empty or too large file).
    public func add(fileAt source: String) throws -> PictureReference {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: source, isDirectory: &isDirectory) else {
            throw PictureError("\(source): no such file")
        }
        guard !isDirectory.boolValue else { throw PictureError("\(source) is a directory, not a picture") }
        guard let handle = FileHandle(forReadingAtPath: source) else { throw PictureError("\(source) cannot be read") }
        defer { try? handle.close() }
        let size = (try? handle.seekToEnd()).map(Int64.init) ?? 0
        guard size > 0 else { throw PictureError("\(source) is empty") }
        guard size <= Self.maximumBytes else {
            throw PictureError("\(source) is \(size) bytes; pictures are at most \(Self.maximumBytes) bytes (50 MB)")
        }
        try handle.seek(toOffset: 0)
        // Copied and hashed in pieces into a temporary file here, then named by its checksum:
        // a 50 MB picture costs a piece of memory, not its size.
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true,
                                                attributes: [.posixPermissions: 0o700])
        let temporary = (directory as NSString).appendingPathComponent("adding.tmp-\(getpid())")
        guard FileManager.default.createFile(atPath: temporary, contents: nil, attributes: [.posixPermissions: 0o600]),
              let output = FileHandle(forWritingAtPath: temporary)
        else { throw PictureError("cannot write into \(directory)") }
        var hasher = SHA256Hasher()
        var copied: Int64 = 0
        do {
            defer { try? output.close() }
            while copied < size {
                guard let data = try? handle.read(upToCount: 1 << 20), !data.isEmpty else { break }
                hasher.update(data)
                try output.write(contentsOf: data)
                copied += Int64(data.count)
            }
        } catch {
            try? FileManager.default.removeItem(atPath: temporary)
            throw PictureError("cannot write into \(directory): \(error.localizedDescription)")
        }
        guard copied == size else {
            try? FileManager.default.removeItem(atPath: temporary)
            throw PictureError("\(source) cannot be read")
        }
        let picture = PictureReference(checksum: SHA256Hasher.hex(hasher.finish()), size: size)
        if has(picture) {
            try? FileManager.default.removeItem(atPath: temporary)
        } else {
            try? FileManager.default.removeItem(atPath: path(of: picture.checksum))
            try FileManager.default.moveItem(atPath: temporary, toPath: path(of: picture.checksum))
        }
        return picture
    }

    /// Whether the file held for `picture` has exactly its checksum (read in pieces).
    public func isIntact(_ picture: PictureReference) -> Bool {
        guard has(picture), let handle = FileHandle(forReadingAtPath: path(of: picture.checksum)) else { return false }
        defer { try? handle.close() }
        var hasher = SHA256Hasher()
        while let data = try? handle.read(upToCount: 1 << 20), !data.isEmpty { hasher.update(data) }
        return SHA256Hasher.hex(hasher.finish()) == picture.checksum
    }

    /// Writes the picture held here to `file` (replacing what it held), piece by piece.
    public func copy(_ picture: PictureReference, to file: String) throws {
        guard let input = FileHandle(forReadingAtPath: path(of: picture.checksum)) else {
            throw PictureError("the picture \(picture.checksum.prefix(12)) is not in \(directory) yet; run sync")
        }
        defer { try? input.close() }
        guard FileManager.default.createFile(atPath: file, contents: nil), let output = FileHandle(forWritingAtPath: file) else {
            throw PictureError("cannot write \(file)")
        }
        defer { try? output.close() }
        do {
            while let data = try input.read(upToCount: 1 << 20), !data.isEmpty { try output.write(contentsOf: data) }
        } catch {
            throw PictureError("cannot write \(file): \(error.localizedDescription)")
        }
    }

    /// Where a download in progress keeps what arrived (it resumes from there).
    func partialPath(of picture: PictureReference) -> String { path(of: picture.checksum) + ".part" }
}

public struct PictureError: Error, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}
