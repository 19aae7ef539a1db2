import Foundation
import RecordModel

/// The change feed (`change-feed`) with and without gzip, on one server: records/s and the
/// answers' bytes on the wire both ways. The modes alternate, four times each, and each keeps its
/// best rate, so a burst of other work on the shared cores weighs on both alike.
func changeFeedGzip(_ options: BenchOptions, _ backend: BenchBackend) async throws -> [String: JSONValue] {
    let server = try await BenchServer.make(backend, name: "feed-gzip")
    try await fill(server, zone: "Bench", count: options.records)
    try await server.start()
    var rate: [Bool: Double] = [:]
    var bytes: [Bool: Int] = [:]
    var serverCPU: [Bool: Double] = [:]
    for _ in 0..<4 {
        for gzip in [false, true] {
            let connection = try RawHTTPConnection(port: server.port)
            let wire = WireBytes()
            let start = now()
            let ((seen, _), cpu) = try serverCPUSeconds { try fetchAll(connection, server, zone: "Bench", from: nil, gzip: gzip, wire: wire) }
            let elapsed = now() - start
            serverCPU[gzip] = min(serverCPU[gzip] ?? .infinity, cpu)
            guard seen == options.records else { throw RawHTTPConnection.Failure(description: "feed returned \(seen) of \(options.records)") }
            rate[gzip] = max(rate[gzip] ?? 0, Double(seen) / elapsed)
            bytes[gzip] = wire.bytes
        }
    }
    await server.stop()
    let (identityRate, gzipRate) = (rate[false] ?? 0, rate[true] ?? 0)
    let (identityBytes, gzipBytes) = (bytes[false] ?? 0, bytes[true] ?? 0)
    return [
        "records": .int(Int64(options.records)),
        "identityRecordsPerSecond": .double(identityRate), "gzipRecordsPerSecond": .double(gzipRate),
        "identityBytes": .int(Int64(identityBytes)), "gzipBytes": .int(Int64(gzipBytes)),
        "gzipBytesShare": .double(identityBytes > 0 ? Double(gzipBytes) / Double(identityBytes) : 0),
        "gzipSpeedShare": .double(identityRate > 0 ? gzipRate / identityRate : 0),
        "identityServerCPUMicrosecondsPerRecord": .double(microsecondsPer(serverCPU[false] ?? 0, options.records)),
        "gzipServerCPUMicrosecondsPerRecord": .double(microsecondsPer(serverCPU[true] ?? 0, options.records)),
        "gzipCPUToIdentity": .double(((serverCPU[true] ?? 0) / max(serverCPU[false] ?? 1, 1e-9) * 100).rounded() / 100),
    ]
}
