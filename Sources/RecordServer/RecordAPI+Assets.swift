import Crypto
import Foundation
import RecordModel
import RecordStore

// Assets, in CloudKit's upload-then-attach shape:
// 1. `assets/upload` hands out single-use upload URLs bound to the caller, zone, record and field;
// 2. the bytes are POSTed to that URL (streamed to disk, `AssetTransfer`), which answers a receipt;
// 3. saving the record with the receipt attaches the asset (checked here, before the store sees
//    the batch); records come back with a signed `downloadURL` for whoever read them.
extension RecordAPI {
    /// `assets/upload`: one upload URL per `{recordName, recordType, fieldName}`.
    func requestAssetUploads(_ body: JSONValue, _ scope: DatabaseScope, request: RequestFacts) async throws -> JSONValue {
        var zone = try ZoneID.fromRequest(body["zoneID"])
        let entries = try body.requiredArray("tokens")
        guard !entries.isEmpty else { throw ServerError.badRequest("tokens must name at least one record field") }
        guard entries.count <= 400 else { throw ServerError(.limitExceeded, "at most 400 upload tokens per request") }
        switch scope.kind {
        case .private: _ = try await store.lookupZone(scope, zoneName: zone.zoneName)
        case .shared:
            guard zone.ownerRecordName != nil else { throw ServerError.badRequest("a shared zone's zoneID needs its ownerRecordName") }
            // Uploading is the first half of a write: a read-only participant is refused it too.
            if try await store.lookupSharedZone(scope, zone: zone).readOnly { throw ShareRules.readOnly(zone) }
        case .public:
            guard zone.zoneName == ZoneID.defaultZoneName else {
                throw ServerError(.zoneNotFound, "the public database has only _defaultZone")
            }
            zone.ownerRecordName = DatabaseScope.publicOwnerRecordName
        }
        let assetScope = AssetScope(scope, zone: zone)
        let now = RecordAPI.nowMilliseconds()
        var uploads: [AssetUpload] = []
        var answers: [JSONValue] = []
        for entry in entries {
            guard let recordName = entry["recordName"]?.stringValue, let fieldName = entry["fieldName"]?.stringValue else {
                throw ServerError.badRequest("every upload token needs a recordName and a fieldName")
            }
            try Names.validateRecordName(recordName)
            try Names.validateIdentifier(fieldName, what: "field name")
            let binding = AssetBinding(database: scope.kind, zoneName: zone.zoneName, recordName: recordName, fieldName: fieldName)
            let upload = AssetUpload(id: RandomToken.hex(bytes: 24), userID: scope.userID, scopeKey: assetScope.key,
                                     bindingKey: binding.key, createdAt: now)
            uploads.append(upload)
            answers.append([
                "recordName": .string(recordName), "fieldName": .string(fieldName),
                "url": .string(baseURL(request) + AssetURLs.uploadPath + upload.id),
            ])
        }
        try await store.createAssetUploads(uploads)
        return ["tokens": .array(answers)]
    }

    /// `http://host:port` as the client reached the daemon (a proxy's authority and scheme included).
    func baseURL(_ request: RequestFacts) -> String {
        let host = request.host ?? boundAuthority ?? "127.0.0.1"
        return (request.forwardedProto == "https" ? "https" : "http") + "://" + host
    }

    /// Milliseconds since 1970 by the wall clock: receipts and download URLs are dated by it.
    static func nowMilliseconds() -> Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// The key that signs download URLs (the store's, read once).
    func assetSigningKey() async throws -> SymmetricKey {
        if let cached = assetKeyCache.withLock({ $0 }) { return cached }
        let key = SymmetricKey(data: try await store.assetSigningSecret())
        assetKeyCache.withLock { $0 = key }
        return key
    }

    /// Runs `body` with records' assets linked for `scope`'s caller (`AssetLinks`).
    func withAssetLinks<T: Sendable>(_ scope: DatabaseScope, request: RequestFacts, _ body: () async throws -> T) async throws -> T {
        let key = try await assetSigningKey()
        let base = baseURL(request)
        let expires = RecordAPI.nowMilliseconds() + AssetLimits.downloadURLMilliseconds
        let links = AssetLinks { record, fieldName, checksum in
            let grant = DownloadGrant(scope: scope, zone: record.zoneID, recordName: record.recordName, fieldName: fieldName,
                                      checksum: checksum, expires: expires)
            return base + AssetURLs.downloadPath + grant.signed(with: key)
        }
        return try await AssetLinks.$current.withValue(links) { try await body() }
    }

    // MARK: Attaching

    /// The batch with every asset value checked and stored in its canonical form
    /// (`{fileChecksum, size}`), the receipts to spend once the records are saved, and the
    /// operations refused (by index) with their errors.
    struct PreparedAssets {
        var operations: [RecordOperation]
        var receiptsByRecord: [String: [String]] = [:]
        var refused: [Int: ServerError] = [:]
    }

    func prepareAssets(_ operations: [RecordOperation], _ scope: DatabaseScope, zone: ZoneID) async throws -> PreparedAssets {
        var prepared = PreparedAssets(operations: operations)
        // Find the asset values first; most batches have none and cost one scan.
        struct Found { var operation: Int, field: String, element: Int?, value: JSONValue }
        var found: [Found] = []
        for (index, operation) in operations.enumerated() where operation.type != .delete && operation.type != .forceDelete {
            guard case .object(let fields)? = operation.record["fields"] else { continue }
            for (name, field) in fields {
                guard let (value, isList) = RecordAPI.assetValue(field) else { continue }
                if isList {
                    for (element, item) in (value.arrayValue ?? []).enumerated() { found.append(Found(operation: index, field: name, element: element, value: item)) }
                } else {
                    found.append(Found(operation: index, field: name, element: nil, value: value))
                }
            }
        }
        guard !found.isEmpty else { return prepared }
        var assetZone = zone
        if scope.kind == .public { assetZone.ownerRecordName = DatabaseScope.publicOwnerRecordName }
        let assetScope = AssetScope(scope, zone: assetZone)
        let receipts = found.compactMap { $0.value["receipt"]?.stringValue }
        var uploadsByReceipt: [String: AssetUpload] = [:]
        for upload in try await store.assetUploads(receipts: receipts) { if let receipt = upload.receipt { uploadsByReceipt[receipt] = upload } }
        var currentRecords: [String: StoredRecord?] = [:]
        let now = RecordAPI.nowMilliseconds()
        var canonical: [Int: [String: [Int?: JSONValue]]] = [:]
        for item in found {
            let recordName = operations[item.operation].record["recordName"]?.stringValue ?? ""
            do {
                let value: JSONValue
                if let receipt = item.value["receipt"]?.stringValue {
                    let binding = AssetBinding(database: scope.kind, zoneName: zone.zoneName, recordName: recordName, fieldName: item.field)
                    guard let upload = uploadsByReceipt[receipt], let checksum = upload.checksum, let size = upload.size,
                        let uploadedAt = upload.uploadedAt
                    else { throw ServerError.badRequest("field '\(item.field)': unknown asset receipt") }
                    guard upload.userID == scope.userID, upload.scopeKey == assetScope.key, upload.bindingKey == binding.key else {
                        throw ServerError.badRequest("field '\(item.field)': the asset receipt was issued for another user, zone, record or field")
                    }
                    guard upload.attachedAt == nil else { throw ServerError.badRequest("field '\(item.field)': the asset receipt was already used") }
                    guard uploadedAt > now - AssetLimits.receiptMilliseconds else {
                        throw ServerError.badRequest("field '\(item.field)': the asset receipt has expired; upload again")
                    }
                    if let claimed = item.value["fileChecksum"]?.stringValue, AssetChecksum.hex(wire: claimed) != checksum {
                        throw ServerError.badRequest("field '\(item.field)': fileChecksum does not match the uploaded bytes")
                    }
                    prepared.receiptsByRecord[recordName, default: []].append(receipt)
                    value = ["fileChecksum": .string(AssetChecksum.wire(hex: checksum)), "size": .int(size)]
                } else if let wire = item.value["fileChecksum"]?.stringValue, let checksum = AssetChecksum.hex(wire: wire) {
                    // No receipt: bytes the caller uploaded into this database, or the asset the field already holds.
                    var allowed = try await store.hasUploadedAsset(userID: scope.userID, scopeKey: assetScope.key, checksum: checksum)
                    if !allowed {
                        if currentRecords[recordName] == nil {
                            let result = try await store.lookupRecords(scope, zone: zone, recordNames: [recordName]).first
                            currentRecords[recordName] = (try? result?.get()) ?? nil
                        }
                        if let current = currentRecords[recordName] ?? nil {
                            allowed = AssetFields.checksums(inFieldsJSON: current.fieldsJSON).contains { $0.field == item.field && $0.checksum == checksum }
                        }
                    }
                    guard allowed, let blob = try await store.assetBlob(scopeKey: assetScope.key, checksum: checksum) else {
                        throw ServerError.badRequest("field '\(item.field)': an asset needs the receipt of its upload (assets/upload)")
                    }
                    value = ["fileChecksum": .string(wire), "size": .int(blob.size)]
                } else {
                    throw ServerError.badRequest("field '\(item.field)': an asset value needs the receipt of its upload (assets/upload)")
                }
                canonical[item.operation, default: [:]][item.field, default: [:]][item.element] = value
            } catch let error as ServerError {
                if prepared.refused[item.operation] == nil { prepared.refused[item.operation] = error.with(recordName: recordName) }
            }
        }
        for (index, fields) in canonical where prepared.refused[index] == nil {
            guard case .object(var record) = prepared.operations[index].record, case .object(var recordFields)? = record["fields"] else { continue }
            for (name, values) in fields {
                guard case .object(var field)? = recordFields[name] else { continue }
                if let single = values[nil] {
                    field["value"] = single
                    field["type"] = "ASSETID"
                } else {
                    let count = values.count
                    field["value"] = .array((0..<count).map { values[$0] ?? .null })
                    field["type"] = "ASSETID_LIST"
                }
                recordFields[name] = .object(field)
            }
            record["fields"] = .object(recordFields)
            prepared.operations[index].record = .object(record)
        }
        return prepared
    }

    /// The asset value of a record field (`{"value", "type"?}`), and whether it is a list: typed
    /// ASSETID/ASSETID_LIST, or untyped and shaped like an asset.
    static func assetValue(_ field: JSONValue) -> (JSONValue, Bool)? {
        assetValue(value: field["value"], type: field["type"])
    }

    /// `assetValue(_:)` of a field given as its `value` and `type` members (a `RecordDraft.Field`).
    static func assetValue(value: JSONValue?, type: JSONValue?) -> (JSONValue, Bool)? {
        guard let value, !value.isNull else { return nil }
        switch type?.stringValue {
        case "ASSETID": return (value, false)
        case "ASSETID_LIST": return (value, true)
        case nil:
            func looksLikeAsset(_ item: JSONValue) -> Bool {
                guard case .object(let members) = item else { return false }
                return members["receipt"] != nil || members["fileChecksum"] != nil || members["downloadURL"] != nil
            }
            if looksLikeAsset(value) { return (value, false) }
            if let list = value.arrayValue, let first = list.first, looksLikeAsset(first) { return (value, true) }
            return nil
        default: return nil
        }
    }
}

/// What a download URL grants: one asset of one record, read as one caller, until it expires.
/// Signed (HMAC-SHA256 with the store's secret), so it needs no other credentials and cannot be
/// guessed or altered; the caller's access to the record is checked again at download.
struct DownloadGrant: Equatable {
    var userID: Int64
    var userRecordName: String
    var container: String
    var environment: Environment
    var database: DatabaseKind
    var zoneName: String
    var ownerRecordName: String
    var recordName: String
    var fieldName: String
    var checksum: String
    var expires: Int64

    init(scope: DatabaseScope, zone: ZoneID, recordName: String, fieldName: String, checksum: String, expires: Int64) {
        userID = scope.userID
        userRecordName = scope.userRecordName
        container = scope.container
        environment = scope.environment
        database = scope.kind
        zoneName = zone.zoneName
        switch scope.kind {
        case .private: ownerRecordName = scope.userRecordName
        case .shared: ownerRecordName = zone.ownerRecordName ?? ""
        case .public: ownerRecordName = DatabaseScope.publicOwnerRecordName
        }
        self.recordName = recordName
        self.fieldName = fieldName
        self.checksum = checksum
        self.expires = expires
    }

    private var fields: [String] {
        ["1", String(userID), userRecordName, container, environment.rawValue, database.rawValue, zoneName, ownerRecordName, recordName,
         fieldName, checksum, String(expires)]
    }

    func signed(with key: SymmetricKey) -> String {
        let payload = Array(fields.joined(separator: "\u{1F}").utf8)
        let signature = HMAC<SHA256>.authenticationCode(for: payload, using: key)
        return DownloadGrant.base64URL(payload) + "." + DownloadGrant.base64URL(Array(signature))
    }

    /// The grant a token carries, or nil when it is malformed or its signature is wrong.
    init?(token: String, key: SymmetricKey) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard token.utf8.count < 4096, parts.count == 2, let payload = DownloadGrant.base64URLDecode(String(parts[0])),
            let signature = DownloadGrant.base64URLDecode(String(parts[1])),
            HMAC<SHA256>.isValidAuthenticationCode(signature, authenticating: payload, using: key)
        else { return nil }
        let fields = String(decoding: payload, as: UTF8.self).split(separator: "\u{1F}", omittingEmptySubsequences: false).map(String.init)
        guard fields.count == 12, fields[0] == "1", let userID = Int64(fields[1]), let environment = Environment(rawValue: fields[4]),
            let database = DatabaseKind(rawValue: fields[5]), let expires = Int64(fields[11])
        else { return nil }
        self.userID = userID
        userRecordName = fields[2]
        container = fields[3]
        self.environment = environment
        self.database = database
        zoneName = fields[6]
        ownerRecordName = fields[7]
        recordName = fields[8]
        fieldName = fields[9]
        checksum = fields[10]
        self.expires = expires
    }

    /// The caller the grant was made for, as a scope to read the record with.
    var scope: DatabaseScope {
        let caller = User(id: userID, name: "", recordName: userRecordName)
        switch database {
        case .public: return .publicDatabase(caller: userRecordName.isEmpty ? nil : caller, container: container, environment: environment)
        case .private, .shared: return DatabaseScope(user: caller, container: container, environment: environment, kind: database)
        }
    }

    var zone: ZoneID { ZoneID(zoneName: zoneName, ownerRecordName: database == .shared ? ownerRecordName : nil) }

    var assetScopeKey: String { AssetScope(container: container, environment: environment, ownerRecordName: ownerRecordName).key }

    static func base64URL(_ bytes: [UInt8]) -> String {
        Data(bytes).base64EncodedString().replacingOccurrences(of: "+", with: "-").replacingOccurrences(of: "/", with: "_")
            .replacingOccurrences(of: "=", with: "")
    }

    static func base64URLDecode(_ text: String) -> [UInt8]? {
        var standard = text.replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
        while standard.utf8.count % 4 != 0 { standard += "=" }
        return Data(base64Encoded: standard).map(Array.init)
    }
}
