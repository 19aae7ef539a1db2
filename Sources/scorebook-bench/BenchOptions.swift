/// The bench's command line (`main.swift` reads it).
struct BenchOptions {
    var backends: [BenchBackend] = [.sqlite]
    var json = false
    var records = 100_000
    var largeZone = 1_000_000
    var subscribers = 1000
    var rounds = 200
    var runs = 100
    /// `change-feed`'s page size (`resultsLimit`, at most 400): small pages show what a request
    /// costs besides its records.
    var feedPage = 400
    /// The nice value of the fan-out scenarios' reading thread (0: the daemon's equal).
    var clientNice: Int32 = 0
    /// The soak's length and the parts of its load (`soak`).
    var soakMinutes = 10.0
    var soakParts = SoakPart.all
    var scenarios: [String] = []
}
