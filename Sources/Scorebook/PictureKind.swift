import Foundation
import SyncEngine

/// The picture formats an avatar or match photo may be, told by a file's first bytes (its
/// name says nothing: `photo.jpg` may be a text file).
public enum PictureKind: String, CaseIterable, Sendable {
    case png = "PNG", jpeg = "JPEG", gif = "GIF", webp = "WebP", heic = "HEIC"

    /// The kind of picture these first bytes start, or nil for anything else.
    public static func of(header bytes: [UInt8]) -> PictureKind? {
        func starts(_ prefix: [UInt8], at offset: Int = 0) -> Bool {
            bytes.count >= offset + prefix.count && Array(bytes[offset..<offset + prefix.count]) == prefix
        }
        if starts([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]) { return .png }
        if starts([0xFF, 0xD8, 0xFF]) { return .jpeg }
        if starts(Array("GIF87a".utf8)) || starts(Array("GIF89a".utf8)) { return .gif }
        if starts(Array("RIFF".utf8)) && starts(Array("WEBP".utf8), at: 8) { return .webp }
        // An ISO media file (`ftyp` box) whose brand is one of HEIF's.
        if starts(Array("ftyp".utf8), at: 4), bytes.count >= 12,
           heifBrands.contains(String(decoding: bytes[8..<12], as: UTF8.self)) { return .heic }
        return nil
    }

    static let heifBrands: Set<String> = ["heic", "heix", "hevc", "hevx", "heim", "heis", "hevm", "hevs", "mif1", "msf1"]

    /// Refuses a file that is not a picture. A file that cannot be read, is empty or too large
    /// passes here: adding it reports that more precisely.
    public static func requirePicture(at path: String) throws {
        let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard Int64(size) <= PictureFiles.maximumBytes else { return }
        guard let handle = FileHandle(forReadingAtPath: path) else { return }
        defer { try? handle.close() }
        guard let header = try? handle.read(upToCount: 16), !header.isEmpty else { return }
        guard of(header: Array(header)) == nil else { return }
        let kinds = allCases.map(\.rawValue)
        throw ScorebookError(.invalidInput, "\(path) is not a picture: only \(kinds.dropLast().joined(separator: ", ")) "
            + "and \(kinds.last!) files are (told by their first bytes)")
    }
}
