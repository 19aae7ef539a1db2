import RecordModel
import RecordStore

extension RecordAPI {
    /// `records/modify`, its body read straight into drafts (`ModifyRequestBody`).
    func modifyRecords(_ request: consuming ModifyRequestBody, _ scope: DatabaseScope, deviceID: String?) async throws -> JSONValue {
        let body = JSONValue.object(request.members)
        let zone = try ZoneID.fromRequest(body["zoneID"])
        let atomic = try body.optionalBool("atomic") ?? true
        let desiredKeys = try body.desiredKeys()
        guard var rawOperations = request.operations else { throw ServerError.badRequest("operations must be an array") }
        _ = consume request
        try RecordRules.checkOperationCount(rawOperations.count)
        // CloudKit's operation dictionary may carry its own desiredKeys, over the request's.
        var operationKeys: [String: Set<String>] = [:]
        // Each draft is moved out of the parsed operation (`take()`), not copied: a copy retained
        // every string of the record, and freeing the parsed operations released them all again.
        var operations: [RecordOperation] = []
        operations.reserveCapacity(rawOperations.count)
        for index in rawOperations.indices {
            guard let name = rawOperations[index].operationType?.stringValue, let type = RecordOperationType(rawValue: name) else {
                throw ServerError.badRequest("unknown operationType \(rawOperations[index].operationType?.serializedString() ?? "(none)")")
            }
            guard let record = rawOperations[index].record.take(), record.isObject else {
                throw ServerError.badRequest("operation \(name) needs a record object")
            }
            let recordOperation = RecordOperation(type: type, draft: record)
            if let keys = try JSONValue.desiredKeys(rawOperations[index].desiredKeys), let recordName = recordOperation.recordName {
                operationKeys[recordName] = keys
            }
            operations.append(recordOperation)
        }
        _ = consume rawOperations
        let keysByRecord = operationKeys
        // Asset values are checked (receipts) and made canonical before the store sees the batch.
        // Most batches name no asset: found from the drafts' fields, they skip the asset scan
        // (which reads every operation's record as a dictionary).
        let namesAssets = operations.contains { operation in
            guard operation.type != .delete, operation.type != .forceDelete, case .list(let fields) = operation.draft.fields else { return false }
            return fields.contains { RecordAPI.assetValue(value: $0.value, type: $0.type) != nil }
        }
        let links = AssetLinks.current  // a task-local: read once, not once a record
        // The whole answer, `{"records":[...]}`, in one buffer (handed on as it is).
        let answer: @Sendable ([RecordOperationResult]) -> JSONValue = { results in
            var memo = StoredRecord.AnswerMemo()
            return JSONValue.rawArray(results, under: "records", estimatedBytes: { result in
                if case .saved(let record) = result { return record.estimatedJSONBytes }
                return 160
            }, write: { result, out in
                switch result {
                case .saved(let record):
                    record.write(into: &out, desiredKeys: keysByRecord.isEmpty ? desiredKeys : keysByRecord[record.recordName] ?? desiredKeys,
                                 links: links, memo: &memo)
                case .deleted(let name): JSONValue.object(["recordName": .string(name), "deleted": true]).serialize(into: &out)
                case .failed(let error): error.json().serialize(into: &out)
                }
            })
        }
        if !namesAssets {
            // No receipts to mark spent.
            return answer(try await self.store.modifyRecords(scope, zone: zone, operations: operations, atomic: atomic, deviceID: deviceID))
        }
        let prepared = try await prepareAssets(operations, scope, zone: zone)
        let results: [RecordOperationResult]
        if prepared.refused.isEmpty {
            results = try await self.store.modifyRecords(scope, zone: zone, operations: prepared.operations, atomic: atomic, deviceID: deviceID)
        } else if atomic {
            results = operations.indices.map { index in
                .failed(prepared.refused[index] ?? RecordRules.atomicError(recordName: operations[index].recordName))
            }
        } else {
            let kept = prepared.operations.indices.filter { prepared.refused[$0] == nil }.map { prepared.operations[$0] }
            let saved = kept.isEmpty
                ? [] : try await self.store.modifyRecords(scope, zone: zone, operations: kept, atomic: false, deviceID: deviceID)
            // In the request's order, as every other batch answers: the refused where they stood.
            var savedResults = saved.makeIterator()
            results = prepared.operations.indices.compactMap { index in
                prepared.refused[index].map { .failed($0) } ?? savedResults.next()
            }
        }
        let spent = results.flatMap { result -> [String] in
            if case .saved(let record) = result { return prepared.receiptsByRecord[record.recordName] ?? [] }
            return []
        }
        if !spent.isEmpty { try await store.markAssetsAttached(receipts: spent) }
        return answer(results)
    }

    func lookupRecords(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        let zone = try ZoneID.fromRequest(body["zoneID"])
        let desiredKeys = try body.desiredKeys()
        // CloudKit's lookup entries may carry their own desiredKeys, over the request's.
        var entryKeys: [String: Set<String>] = [:]
        let names = try body.requiredArray("records").map { entry -> String in
            guard let name = entry["recordName"]?.stringValue else { throw ServerError.badRequest("every lookup entry needs a recordName") }
            if let keys = try entry.desiredKeys() { entryKeys[name] = keys }
            return name
        }
        let options = RecordJSONOptions(desiredKeys: desiredKeys, keysByRecord: entryKeys, links: AssetLinks.current,
                                        opening: RecordAPI.recordsOpening)
        return .raw(RecordAPI.recordsJSON(try await store.lookupRecordsJSON(scope, zone: zone, recordNames: names, options: options)))
    }

    func queryRecords(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        let zone = try ZoneID.fromRequest(body["zoneID"])
        guard let queryJSON = body["query"] else { throw ServerError.badRequest("records/query needs a query") }
        let query = try RecordQuery(json: queryJSON)
        let limit = try body.optionalInt("resultsLimit") ?? 200
        let marker = try body.optionalString("continuationMarker")
        let desiredKeys = try body.desiredKeys()
        let page = try await self.store.queryRecords(scope, zone: zone, query: query, resultsLimit: limit, continuationMarker: marker)
        var answer: [String: JSONValue] = ["records": .array(page.records.map { $0.json(desiredKeys: desiredKeys) })]
        if let next = page.continuationMarker { answer["continuationMarker"] = .string(next) }
        return .object(answer)
    }

    /// `records/changes`: one zone's feed.
    func recordChanges(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        let zone = try ZoneID.fromRequest(body["zoneID"])
        let token = try body.optionalString("syncToken")
        let limit = try body.optionalInt("resultsLimit") ?? 400
        let desiredKeys = try body.desiredKeys()
        // The store writes the records' JSON (`RecordJSONWriter`); the answer is made around it once.
        let options = RecordJSONOptions(desiredKeys: desiredKeys, links: AssetLinks.current, opening: RecordAPI.recordsOpening)
        return .raw(RecordAPI.feedPageJSON(try await store.zoneChangesJSON(scope, zone: zone, syncToken: token, resultsLimit: limit,
                                                                             recordTypes: nil, options: options)))
    }

    /// `changes/zone`: several zones' feeds; a failing zone is an error entry, not a failed request.
    func zoneChanges(_ body: JSONValue, _ scope: DatabaseScope) async throws -> JSONValue {
        let limit = try body.optionalInt("resultsLimit") ?? 400
        struct ZoneRequest: Sendable {
            var zone: ZoneID
            var token: String?
            var desiredKeys: Set<String>?
            var recordTypes: Set<String>?
            var limit: Int
        }
        func recordTypes(_ dictionary: JSONValue) throws -> Set<String>? {
            try dictionary["desiredRecordTypes"].flatMap { value -> Set<String>? in
                guard !value.isNull else { return nil }
                guard let list = value.arrayValue else { throw ServerError.badRequest("desiredRecordTypes must be an array") }
                return Set(list.compactMap(\.stringValue))
            }
        }
        // As in CloudKit, the request's desiredKeys and desiredRecordTypes apply to every zone that gives none.
        let defaultKeys = try body.desiredKeys()
        let defaultTypes = try recordTypes(body)
        let requests = try body.requiredArray("zones").map { entry -> ZoneRequest in
            ZoneRequest(zone: try ZoneID.fromRequest(entry["zoneID"]), token: try entry.optionalString("syncToken"),
                        desiredKeys: try entry.desiredKeys() ?? defaultKeys, recordTypes: try recordTypes(entry) ?? defaultTypes,
                        limit: try entry.optionalInt("resultsLimit") ?? limit)
        }
        guard requests.count <= 100 else { throw ServerError(.limitExceeded, "at most 100 zones per request") }
        let links = AssetLinks.current
        /// A zone's entry, after `opening` in the store's buffer.
        func page(_ request: ZoneRequest, opening: [UInt8]) async throws -> [UInt8] {
            let options = RecordJSONOptions(desiredKeys: request.desiredKeys, links: links, opening: opening)
            return RecordAPI.feedPageJSON(try await store.zoneChangesJSON(scope, zone: request.zone, syncToken: request.token,
                                                                           resultsLimit: request.limit, recordTypes: request.recordTypes,
                                                                           options: options))
        }
        /// A failing zone's entry.
        func failed(_ error: ServerError, _ request: ZoneRequest) -> JSONValue {
            var error = error
            error.zoneID = request.zone
            return error.json()
        }
        // One zone, nearly every sync's request: the store writes the whole answer's beginning,
        // and the answer is finished in its buffer.
        if requests.count == 1, let request = requests.first {
            do {
                var answer = try await page(request, opening: RecordAPI.oneZoneChangesOpening)
                answer.appendLiteral("]}")
                return .raw(answer)
            } catch let error as ServerError {
                return ["zones": [failed(error, request)]]
            }
        }
        var entries: [JSONValue] = []
        for request in requests {
            do {
                entries.append(.raw(try await page(request, opening: RecordAPI.recordsOpening)))
            } catch let error as ServerError {
                entries.append(failed(error, request))
            }
        }
        return JSONValue.rawArray(entries, under: "zones", estimatedBytes: { entry in
            if case .raw(let bytes) = entry { return bytes.count }
            return 160
        }, write: { entry, out in entry.serialize(into: &out) })
    }
}
