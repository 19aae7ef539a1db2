/// Orders outbox entries into `records/modify` batches: saves first, each record after the
/// records it depends on (parents before children, also across batches), then deletions;
/// at most `limit` operations per batch.
package enum OutboxPlanner {
    package static func batches(_ changes: [PendingChange], limit: Int = 400) -> [[PendingChange]] {
        precondition(limit > 0, "a batch holds at least one operation")
        let ordered = order(changes)
        return stride(from: 0, to: ordered.count, by: limit).map { Array(ordered[$0..<min($0 + limit, ordered.count)]) }
    }

    /// Saves sorted by their depth in the dependency graph among pending saves (then by edit
    /// order), followed by deletions in edit order.
    package static func order(_ changes: [PendingChange]) -> [PendingChange] {
        let saves = changes.filter { $0.operation == .save }
        let deletes = changes.filter { $0.operation == .delete }.sorted { $0.sequence < $1.sequence }
        let byName = Dictionary(saves.map { ($0.recordName, $0) }, uniquingKeysWith: { first, _ in first })
        var depth: [String: Int] = [:]

        // Iterative depth-first walk; a dependency cycle (which the server would reject anyway)
        // is cut where it closes instead of looping.
        func computeDepth(_ root: String) -> Int {
            if let known = depth[root] { return known }
            var stack: [(name: String, expanded: Bool)] = [(root, false)]
            var onPath: Set<String> = []
            while let (name, expanded) = stack.popLast() {
                if depth[name] != nil { continue }
                let parents = (byName[name]?.dependencies ?? []).filter { byName[$0] != nil && $0 != name }
                if expanded {
                    onPath.remove(name)
                    depth[name] = parents.map { (depth[$0] ?? -1) + 1 }.max() ?? 0
                } else {
                    onPath.insert(name)
                    stack.append((name, true))
                    for parent in parents where depth[parent] == nil && !onPath.contains(parent) {
                        stack.append((parent, false))
                    }
                }
            }
            return depth[root] ?? 0
        }

        let sortedSaves = saves.sorted {
            let (left, right) = (computeDepth($0.recordName), computeDepth($1.recordName))
            return left != right ? left < right : $0.sequence < $1.sequence
        }
        return sortedSaves + deletes
    }
}
