/// A server the HTTP scenarios talk to: in-process (`BenchServer`) or a real `scorebookd`
/// subprocess (`DaemonUnderTest`).
protocol BenchTarget {
    var port: Int { get }
    var token: String { get }
    /// `/database/1/{container}/{environment}/private`
    var databasePath: String { get }
    /// `/database/1/{container}/{environment}`
    var environmentPath: String { get }
}
