struct Stats {
    var samples: [Double]

    func percentile(_ p: Double) -> Double {
        guard !samples.isEmpty else { return .nan }
        let sorted = samples.sorted()
        let index = min(sorted.count - 1, max(0, Int((p / 100 * Double(sorted.count)).rounded(.up)) - 1))
        return sorted[index]
    }

    var median: Double { percentile(50) }
    var p99: Double { percentile(99) }
}
