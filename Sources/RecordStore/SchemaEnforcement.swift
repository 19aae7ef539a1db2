import Foundation
import RecordModel
import Synchronization

/// Checks records against the schema of the request's environment.
package struct SchemaEnforcer {
    package let environment: Environment
    package let production: Schema
    /// The container's development schema (only in development).
    package var development: Schema
    /// Types and fields this request adds (development only), written with the transaction.
    package var additions: [String: [String: FieldType]] = [:]

    package init(environment: Environment, production: Schema, development: Schema) {
        self.environment = environment
        self.production = production
        self.development = development
    }

    /// The declared type of a field, for reading fields sent without `type`.
    /// The declared field types of one record type, fetched once a record rather than once a
    /// field (these lookups showed in batch-write profiles).
    package struct TypeFields {
        let additions: [String: FieldType]?
        let development: [String: FieldSchema]?
        let production: [String: FieldSchema]?

        static let none = TypeFields(additions: nil, development: nil, production: nil)

        package func type(_ field: String) -> FieldType? {
            additions?[field] ?? development?[field]?.type ?? production?[field]?.type
        }
    }

    /// What `declaredType(recordType:field:)` answers for each field of `recordType`.
    package func declaredFields(recordType: String) -> TypeFields {
        guard environment == .development else {
            return TypeFields(additions: nil, development: nil, production: production.recordTypes[recordType]?.fields)
        }
        return TypeFields(additions: additions[recordType], development: development.recordTypes[recordType]?.fields,
                          production: production.recordTypes[recordType]?.fields)
    }

    package func declaredType(recordType: String, field: String) -> FieldType? {
        if environment == .development {
            if let type = additions[recordType]?[field] ?? development.fieldType(recordType: recordType, field: field) { return type }
        }
        return production.fieldType(recordType: recordType, field: field)
    }

    /// Throws `BAD_REQUEST` naming the type or field that does not match; in development, notes new
    /// fields instead.
    package mutating func check(_ record: Record) throws {
        switch environment {
        case .production:
            guard let typeSchema = production.recordTypes[record.recordType] else {
                throw ServerError.badRequest("unknown record type '\(record.recordType)'")
            }
            for (name, value) in record.fields {
                guard let field = typeSchema.fields[name] else {
                    throw ServerError.badRequest("unknown field '\(name)' of record type '\(record.recordType)'")
                }
                guard field.type == value.type else {
                    throw ServerError.badRequest(
                        "field '\(name)' of record type '\(record.recordType)' is \(field.type.wireName), not \(value.type.wireName)")
                }
            }
        case .development:
            let known = TypeFields(additions: additions[record.recordType], development: development.recordTypes[record.recordType]?.fields,
                                   production: nil)
            for (name, value) in record.fields {
                if let known = known.type(name) {
                    guard known == value.type else {
                        throw ServerError.badRequest(
                            "field '\(name)' of record type '\(record.recordType)' is \(known.wireName), not \(value.type.wireName)")
                    }
                } else {
                    additions[record.recordType, default: [:]][name] = value.type
                }
            }
        }
    }
}
