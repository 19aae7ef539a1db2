/// The known name a mistyped word most likely meant (`lst` → `list`), for the "did you mean"
/// of both executables.
public enum NearestName {
    /// The name closest to `word` by edit distance, if close enough to be a typo of it; a word
    /// that begins exactly one name is taken for it.
    public static func nearest(to word: String, among names: [String]) -> String? {
        let scored = names.map { (name: $0, distance: distance(word.lowercased(), $0)) }
        guard let best = scored.min(by: { $0.distance < $1.distance }) else { return nil }
        let prefixed = names.filter { $0.hasPrefix(word.lowercased()) }
        if prefixed.count == 1 { return prefixed[0] }
        return best.distance <= max(2, best.name.count / 3) ? best.name : nil
    }

    /// Levenshtein distance.
    public static func distance(_ left: String, _ right: String) -> Int {
        let a = Array(left), b = Array(right)
        guard !a.isEmpty, !b.isEmpty else { return max(a.count, b.count) }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                current[j] = min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1))
            }
            previous = current
        }
        return previous[b.count]
    }
}
