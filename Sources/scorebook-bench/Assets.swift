import Foundation
import RecordModel
import Synchronization

/// (11) Assets against a real release `scorebookd` (issue 11): upload and download throughput of
/// a 50 MB file over loopback, each against `cp` of the same file in the same run (the client
/// reads the upload from disk and writes the download to disk, as the CLI does), and the
/// daemon's peak RSS while 20 clients move 50 MB files at once (uploads, then downloads).
func assetTransfers(_ options: BenchOptions, _ backend: BenchBackend) async throws -> [String: JSONValue] {
    let directory = temporaryDirectory("assets-\(backend.rawValue)")
    defer { try? FileManager.default.removeItem(atPath: directory) }
    let size = 50 * 1024 * 1024
    let source = directory + "/picture.bin"
    var generator = SystemRandomNumberGenerator()
    var bytes = [UInt8](repeating: 0, count: size)
    for index in stride(from: 0, to: size, by: 8) {
        withUnsafeBytes(of: generator.next()) { random in for offset in 0..<min(8, size - index) { bytes[index + offset] = random[offset] } }
    }
    _ = FileManager.default.createFile(atPath: source, contents: Data(bytes))
    bytes = []

    let database = backend == .postgres ? try BenchPostgres.createDatabase() : nil
    let daemon = try DaemonUnderTest(directory: directory + "/daemon", database: database, extraArguments: ["--rate-limit", "1000000"])
    let control = try RawHTTPConnection(port: daemon.port)
    try createZone("Pictures", on: daemon, control)
    var figures: [String: JSONValue] = ["bytes": .int(Int64(size))]
    figures["idleResidentMegabytes"] = .double(Double(Subprocess.memory(of: daemon.process.pid)?.resident ?? 0) / 1_048_576)

    // Baseline: cp of the file, best of three (page cache warm, as for the transfers).
    var copySeconds: [Double] = []
    for run in 0..<3 {
        let started = now()
        _ = try Subprocess.run("/bin/cp", [source, directory + "/copy-\(run).bin"])
        copySeconds.append(now() - started)
    }
    let copy = copySeconds.min()!
    figures["cpMegabytesPerSecond"] = .double(Double(size) / 1_048_576 / copy)
    // A second baseline for uploads: hashing the file alone (the daemon hashes every upload).
    var hashSeconds: [Double] = []
    for _ in 0..<3 {
        let started = now()
        _ = try Subprocess.run("/usr/bin/sha256sum", [source])
        hashSeconds.append(now() - started)
    }
    let hash = hashSeconds.min()!
    figures["sha256sumMegabytesPerSecond"] = .double(Double(size) / 1_048_576 / hash)

    // One client, three runs each; every upload differs in its first 8 bytes, so no run is
    // answered by the store's deduplication.
    var uploadSeconds: [Double] = [], downloadSeconds: [Double] = []
    for run in 0..<3 {
        let record = "Picture|~|RUN-\(run)"
        let url = try assetUploadURL(daemon, control, record: record)
        let started = now()
        let singleFile = try uploadFile(port: daemon.port, path: url, file: source, prefix: UInt64(run + 1))
        uploadSeconds.append(now() - started)
        let downloadPath = try attach(daemon, control, record: record, singleFile: singleFile)
        let downloadStarted = now()
        let received = try downloadToFile(port: daemon.port, path: downloadPath, file: directory + "/download-\(run).bin")
        downloadSeconds.append(now() - downloadStarted)
        guard received == size else { throw Subprocess.Failure(description: "downloaded \(received) of \(size) bytes") }
    }
    let upload = uploadSeconds.min()!, download = downloadSeconds.min()!
    figures["uploadMegabytesPerSecond"] = .double(Double(size) / 1_048_576 / upload)
    figures["downloadMegabytesPerSecond"] = .double(Double(size) / 1_048_576 / download)
    figures["uploadVsCp"] = .double(copy / upload)
    figures["uploadVsSha256sum"] = .double(hash / upload)
    figures["downloadVsCp"] = .double(copy / download)

    // 20 clients at once: uploads of 20 different files, then 20 downloads.
    let clients = 20
    let urls = try (0..<clients).map { try assetUploadURL(daemon, control, record: "Picture|~|PARALLEL-\($0)") }
    let port = daemon.port
    let uploaded = try parallel(clients) { client in
        try uploadFile(port: port, path: urls[client], file: source, prefix: UInt64(100 + client))
    }
    figures["parallelUploadPeakMegabytes"] = .double(Double(Subprocess.memory(of: daemon.process.pid)?.peak ?? 0) / 1_048_576)
    let downloads = try (0..<clients).map { try attach(daemon, control, record: "Picture|~|PARALLEL-\($0)", singleFile: uploaded[$0]) }
    let parallelStarted = now()
    let sizes = try parallel(clients) { client in
        try downloadToFile(port: port, path: downloads[client], file: directory + "/parallel-\(client).bin")
    }
    figures["parallelDownloadSeconds"] = .double(now() - parallelStarted)
    guard sizes.allSatisfy({ $0 == size }) else { throw Subprocess.Failure(description: "a parallel download came back short") }
    figures["parallelClients"] = .int(Int64(clients))
    figures["parallelPeakMegabytes"] = .double(Double(Subprocess.memory(of: daemon.process.pid)?.peak ?? 0) / 1_048_576)
    let exit = try daemon.stop()
    figures["exitStatus"] = .int(Int64(exit.status))
    return figures
}

/// Runs `body` on `count` threads at once (not a pool: every client is in flight together).
private final class ParallelResults<T: Sendable>: Sendable {
    let values = Mutex<[Int: Result<T, any Error>]>([:])
}

private func parallel<T: Sendable>(_ count: Int, _ body: @escaping @Sendable (Int) throws -> T) throws -> [T] {
    let results = ParallelResults<T>()
    let group = DispatchGroup()
    for index in 0..<count {
        group.enter()
        Thread.detachNewThread {
            let value = Result { try body(index) }
            results.values.withLock { $0[index] = value }
            group.leave()
        }
    }
    group.wait()
    let values = results.values.withLock { $0 }
    return try (0..<count).map { try values[$0]!.get() }
}

private func assetUploadURL(_ daemon: DaemonUnderTest, _ connection: RawHTTPConnection, record: String) throws -> String {
    let body: JSONValue = ["zoneID": ["zoneName": "Pictures"], "tokens": [["recordName": .string(record), "fieldName": "image"]]]
    let (status, answer) = try connection.request("POST", daemon.databasePath + "/assets/upload", token: daemon.token, body: body.serialized())
    guard status == 200, let url = try JSONValue.parse(answer)["tokens"]?.arrayValue?.first?["url"]?.stringValue,
          let path = URLComponents(string: url)?.percentEncodedPath
    else { throw Subprocess.Failure(description: "assets/upload answered \(status)") }
    return path
}

/// Saves the record with the asset and returns its download URL's path.
private func attach(_ daemon: DaemonUnderTest, _ connection: RawHTTPConnection, record: String, singleFile: JSONValue) throws -> String {
    let body: JSONValue = ["zoneID": ["zoneName": "Pictures"], "operations": [["operationType": "forceReplace", "record": [
        "recordName": .string(record), "recordType": "Picture", "fields": ["image": ["type": "ASSETID", "value": singleFile]],
    ]]]]
    let (status, answer) = try connection.request("POST", daemon.databasePath + "/records/modify", token: daemon.token, body: body.serialized())
    guard status == 200,
          let url = try JSONValue.parse(answer)["records"]?.arrayValue?.first?["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue,
          let path = URLComponents(string: url)?.percentEncodedPath
    else { throw Subprocess.Failure(description: "attaching answered \(status): \(String(decoding: answer.prefix(300), as: UTF8.self))") }
    return path
}

/// POSTs the file, read from disk in 1 MB pieces, with its first 8 bytes replaced by `prefix`;
/// returns the `singleFile` answer.
private func uploadFile(port: Int, path: String, file: String, prefix: UInt64) throws -> JSONValue {
    guard let handle = FileHandle(forReadingAtPath: file) else { throw Subprocess.Failure(description: "cannot read \(file)") }
    defer { try? handle.close() }
    let size = try handle.seekToEnd()
    try handle.seek(toOffset: 0)
    let connection = try RawHTTPConnection(port: port)
    try connection.send(Array("POST \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/octet-stream\r\nContent-Length: \(size)\r\n\r\n".utf8))
    var first = true
    while let data = try handle.read(upToCount: 1 << 20), !data.isEmpty {
        var piece = [UInt8](data)
        if first {
            withUnsafeBytes(of: prefix) { for offset in 0..<min(8, piece.count) { piece[offset] = $0[offset] } }
            first = false
        }
        try connection.send(piece)
    }
    // The answer is small JSON: read until the connection has given the whole of it.
    var answer: [UInt8] = []
    var buffer = [UInt8](repeating: 0, count: 65_536)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { break }
        answer += buffer[0..<count]
        if let text = String(validating: answer, as: UTF8.self), let split = text.range(of: "\r\n\r\n"),
           let lengthRange = text.lowercased().range(of: "content-length: "),
           let length = Int(text[lengthRange.upperBound...].prefix { $0.isNumber }),
           text.utf8.count - text.utf8.distance(from: text.utf8.startIndex, to: split.upperBound) >= length { break }
    }
    let text = String(decoding: answer, as: UTF8.self)
    guard text.hasPrefix("HTTP/1.1 200"), let split = text.range(of: "\r\n\r\n"),
          let singleFile = try JSONValue.parse(Array(text[split.upperBound...].utf8))["singleFile"]
    else { throw Subprocess.Failure(description: "upload answered \(text.prefix(300))") }
    return singleFile
}

/// GETs the path and writes the body to `file` as it arrives; returns the bytes written. Reads
/// the socket itself with a buffer of its own (RawHTTPConnection collects a whole body in memory).
private func downloadToFile(port: Int, path: String, file: String) throws -> Int {
    let connection = try RawHTTPConnection(port: port)
    try connection.send(Array("GET \(path) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8))
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    var pending: [UInt8] = []
    var headEnd: Int?
    while headEnd == nil {
        let count = buffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, $0.count, 0) }
        guard count > 0 else { throw Subprocess.Failure(description: "the download closed before its head") }
        pending += buffer[0..<count]
        headEnd = pending.indices.dropLast(3).first { pending[$0] == 13 && pending[$0 + 1] == 10 && pending[$0 + 2] == 13 && pending[$0 + 3] == 10 }
    }
    let head = String(decoding: pending[0..<headEnd!], as: UTF8.self).lowercased()
    guard head.hasPrefix("http/1.1 200"), let range = head.range(of: "content-length: "),
          let length = Int(head[range.upperBound...].prefix { $0.isNumber })
    else { throw Subprocess.Failure(description: "download answered \(head.prefix(80))") }
    _ = FileManager.default.createFile(atPath: file, contents: nil)
    guard let output = FileHandle(forWritingAtPath: file) else { throw Subprocess.Failure(description: "cannot write \(file)") }
    defer { try? output.close() }
    let early = Array(pending[(headEnd! + 4)...])
    try output.write(contentsOf: early)
    var written = early.count
    while written < length {
        let count = buffer.withUnsafeMutableBytes { recv(connection.fd, $0.baseAddress, min($0.count, length - written), 0) }
        guard count > 0 else { break }
        try buffer.withUnsafeBytes { try output.write(contentsOf: UnsafeRawBufferPointer(rebasing: $0[0..<count])) }
        written += count
    }
    return written
}
