/// The store a scenario runs on: the embedded SQLite file, or a database of the bench's own
/// throw-away PostgreSQL cluster (`BenchPostgres`, only in builds with the PostgreSQL trait).
enum BenchBackend: String, CaseIterable {
    case sqlite, postgres
}
