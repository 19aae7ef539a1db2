import Foundation
import RecordModel
import SyncEngine

extension Scorebook {
    /// The whole book, for `export`.
    public func export() throws -> BookExport {
        var rows: [ExportRow] = []
        for kind in ExportKind.all {
            guard let type = Self.entityType(named: kind.recordType) else { continue }
            let entities = try store.records(ofType: kind.recordType).compactMap { try? type.init(record: $0) }
            for entity in entities.sorted(by: { $0.recordName < $1.recordName }) {
                rows.append(ExportRow(recordType: kind.recordType, recordName: entity.recordName,
                                      modificationDate: entity.modificationDate, values: kind.values(entity)))
            }
        }
        return BookExport(rows: rows)
    }
}
