import Foundation
import RecordModel
import SyncEngine

/// Pictures: avatars and match photos. A picture is copied into the store's
/// picture directory when it is added (so it works offline), and goes to the server with the
/// next sync; pictures of records from elsewhere arrive with the sync that fetches them.
extension Scorebook {
    public var pictureFiles: PictureFiles { PictureFiles(storePath: store.path) }

    /// Sets a person's avatar to the picture in `file`.
    @discardableResult
    public func setAvatar(personReference: String, file: String) throws -> Person {
        var person = try resolve(Person.self, personReference)
        try PictureKind.requirePicture(at: file)
        person.avatar = try pictureFiles.add(fileAt: file).fieldValue
        person.modificationDate = now()
        try save([person])
        return person
    }

    @discardableResult
    public func removeAvatar(personReference: String) throws -> Person {
        var person = try resolve(Person.self, personReference)
        guard person.avatar != nil else { throw ScorebookError(.invalidInput, "\(person.fullName) has no avatar") }
        person.avatar = nil
        person.modificationDate = now()
        try save([person])
        return person
    }

    /// Writes a person's avatar to `file` (replacing an existing file only when `overwrite`);
    /// returns the picture.
    public func saveAvatar(personReference: String, to file: String, overwrite: Bool = false) throws -> PictureReference {
        let person = try resolve(Person.self, personReference)
        guard let picture = person.avatarPicture else { throw ScorebookError(.invalidInput, "\(person.fullName) has no avatar") }
        try write(picture, to: file, overwrite: overwrite)
        return picture
    }

    /// Adds a photo of a match from `file`.
    @discardableResult
    public func addMatchPhoto(matchReference: String, file: String) throws -> MatchImage {
        let match = try resolve(Match.self, matchReference)
        try PictureKind.requirePicture(at: file)
        let picture = try pictureFiles.add(fileAt: file)
        let photo = MatchImage(match: match.recordName, image: picture.fieldValue, modificationDate: now())
        try save([photo])
        return photo
    }

    /// The photos of a match, oldest first.
    public func matchPhotos(matchReference: String) throws -> [MatchImage] {
        let match = try resolve(Match.self, matchReference)
        return try entities(MatchImage.self, referencing: match.recordName)
    }

    /// Writes a match photo to `file` (replacing an existing file only when `overwrite`);
    /// returns the picture.
    public func saveMatchPhoto(reference: String, to file: String, overwrite: Bool = false) throws -> PictureReference {
        let photo = try resolve(MatchImage.self, reference)
        guard let picture = photo.picture else { throw ScorebookError(.invalidInput, "\(photo.recordName) holds no picture") }
        try write(picture, to: file, overwrite: overwrite)
        return picture
    }

    /// Whether this machine holds the picture (it may still be on its way from the server).
    public func hasPicture(_ picture: PictureReference) -> Bool { pictureFiles.has(picture) }

    func write(_ picture: PictureReference, to file: String, overwrite: Bool) throws {
        if !overwrite, FileManager.default.fileExists(atPath: file) {
            throw ScorebookError(.invalidInput, "\(file) already exists; add --force to replace it")
        }
        guard pictureFiles.has(picture) else {
            throw ScorebookError(.invalidInput, "the picture has not been downloaded to this machine yet; run scorebook sync")
        }
        guard pictureFiles.isIntact(picture) else {
            // Removed, so that the next sync downloads it again (sync fetches pictures it lacks).
            try? FileManager.default.removeItem(atPath: pictureFiles.path(of: picture.checksum))
            throw ScorebookError(.invalidInput, "the stored picture is damaged (its checksum differs); run scorebook sync to fetch it again")
        }
        do {
            try pictureFiles.copy(picture, to: file)
        } catch let error as PictureError {
            throw ScorebookError(.invalidInput, error.description)
        }
    }
}
