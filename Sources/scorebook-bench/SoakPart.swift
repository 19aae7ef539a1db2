/// The parts of the soak's load (`--parts`): see `Soak.swift`.
struct SoakPart: OptionSet, Sendable {
    let rawValue: Int
    static let writers = SoakPart(rawValue: 1)
    static let feeds = SoakPart(rawValue: 2)
    static let lookups = SoakPart(rawValue: 4)
    static let couriers = SoakPart(rawValue: 8)
    static let stream = SoakPart(rawValue: 16)
    static let assets = SoakPart(rawValue: 32)
    static let webhooks = SoakPart(rawValue: 64)
    /// The mixed load of three users (`webhooks` is asked for by name).
    static let all: SoakPart = [.writers, .feeds, .lookups, .couriers, .stream, .assets]
    static let names: [(String, SoakPart)] = [
        ("writers", .writers), ("feeds", .feeds), ("lookups", .lookups), ("couriers", .couriers), ("stream", .stream), ("assets", .assets),
        ("webhooks", .webhooks),
    ]

    /// `writers,feeds,…`; nil when a name is unknown.
    init?(list: String) {
        var parts: SoakPart = []
        for name in list.split(separator: ",") {
            guard let part = SoakPart.names.first(where: { $0.0 == name })?.1 else { return nil }
            parts.insert(part)
        }
        self = parts
    }

    init(rawValue: Int) { self.rawValue = rawValue }
}
