import Foundation
import RecordModel

/// Assets: an upload URL per record field, the bytes to it, and downloads by
/// range from the URL a record carries.
extension RecordClient {
    /// Uploads the file at `path` (`size` bytes, streamed from disk) for one field of one record and
    /// returns the `singleFile` dictionary to save the field with (`{"type": "ASSETID", "value": singleFile}`).
    public func uploadAsset(zoneID: ZoneID, recordName: String, recordType: String, fieldName: String,
                            file path: String, size: Int64, progress: (@Sendable (Int64) -> Void)? = nil) async throws -> JSONValue
    {
        let answer = try await post("assets/upload", [
            "zoneID": zoneID.json,
            "tokens": [["recordName": .string(recordName), "recordType": .string(recordType), "fieldName": .string(fieldName)]],
        ])
        guard let address = answer["tokens"]?.arrayValue?.first?["url"]?.stringValue, let url = URL(string: address) else {
            throw RecordClientError.invalidResponse("assets/upload answer without a url")
        }
        // The upload URL is the credential; 50 MB over loopback or a LAN takes seconds, not minutes.
        let request = HTTPRequest(method: "POST", url: url, headers: ["Content-Type": "application/octet-stream", "Accept": "application/json"],
                                  timeout: max(requestTimeout, 300), bodyFile: HTTPBodyFile(path: path, size: size, progress: progress))
        let uploaded = try Self.decode(try await transport.send(request), url: url)
        guard let singleFile = uploaded["singleFile"], singleFile["receipt"]?.stringValue != nil else {
            throw RecordClientError.invalidResponse("an asset upload answer without its receipt")
        }
        return singleFile
    }

    /// `length` bytes of an asset from `offset`, by a `Range` request to its download URL (so a
    /// download cut off resumes where it stopped).
    public func downloadAsset(url address: String, offset: Int64, length: Int) async throws -> [UInt8] {
        guard let url = URL(string: address) else { throw RecordClientError.invalidResponse("a download URL that is not a URL") }
        let request = HTTPRequest(method: "GET", url: url, headers: ["Range": "bytes=\(offset)-\(offset + Int64(length) - 1)"],
                                  timeout: max(requestTimeout, 120))
        let response = try await transport.send(request)
        guard response.status == 206 || response.status == 200 else {
            _ = try Self.decode(response, url: url)
            throw RecordClientError.invalidResponse("HTTP \(response.status) for an asset")
        }
        // A server that ignores Range answers the whole asset: take the asked part of it.
        if response.status == 200 {
            let start = Int(min(offset, Int64(response.body.count)))
            return Array(response.body[start..<min(response.body.count, start + length)])
        }
        return response.body
    }
}
