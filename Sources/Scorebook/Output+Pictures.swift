import Foundation
import RecordModel
import SyncEngine

extension Output {
    /// `person avatar --save`, `match photo save`: what was written where.
    public static func pictureSaved(_ picture: PictureReference, to file: String, json: Bool) -> String {
        json ? JSONText.render(["file": .string(file), "sha256": .string(picture.checksum), "size": .int(picture.size)])
            : "saved \(picture.size) bytes to \(file)"
    }

    /// `match photos`: each photo, its size, and whether this machine holds the picture yet.
    public static func photos(_ photos: [MatchImage], held: (PictureReference) -> Bool, json: Bool) -> String {
        if json {
            return JSONText.render(.array(photos.map { photo in
                var entry = photo.json
                if case .object(var members) = entry, let picture = photo.picture {
                    members["downloaded"] = .bool(held(picture))
                    entry = .object(members)
                }
                return entry
            }))
        }
        let rows = photos.map { photo -> [String] in
            guard let picture = photo.picture else { return [photo.recordName, "-", "no picture"] }
            return [photo.recordName, "\(picture.size)", held(picture) ? "here" : "not downloaded yet"]
        }
        return TextTable(headers: ["PHOTO", "BYTES", "PICTURE"], rows: rows).rendered
    }
}
