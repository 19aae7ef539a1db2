import Foundation
import XCTest

/// The daemon's HTTP side (`Sources/RecordServer`) keeps its dependencies one-directional: the
/// adapter depends on the API, the API on the push hub, the hub on nothing of either. A file
/// depends on another when it names a type declared at the top level of the other; a type's
/// extension files (`RecordAPI+Records.swift`) count as the type's own file.
final class ServerFileGraphTests: XCTestCase {
    func testTheServerFilesHaveNoDependencyCycle() throws {
        let graph = try ServerFileGraph(directory: URL(fileURLWithPath: #filePath)
            .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Sources/RecordServer"))
        XCTAssertGreaterThan(graph.edges.count, 10, "the sources were read")
        XCTAssertTrue(graph.edges["HTTPServer"]?.contains("RecordAPI") == true, "references are found: the adapter uses the API")
        XCTAssertNil(graph.cycle(), "a dependency cycle: \(graph.cycle()?.joined(separator: " -> ") ?? "")")
    }

    /// The checker itself: a cycle of three is found, a chain is not one.
    func testACycleIsFound() throws {
        var graph = ServerFileGraph(edges: ["A": ["B"], "B": ["C"], "C": []])
        XCTAssertNil(graph.cycle())
        graph.edges["C"] = ["A"]
        XCTAssertEqual(graph.cycle().map(Set.init), Set(["A", "B", "C"]))
    }
}

/// Which source file (by type: `Type.swift` with its `Type+Feature.swift`) names a type another declares.
struct ServerFileGraph {
    var edges: [String: Set<String>]

    init(edges: [String: Set<String>]) { self.edges = edges }

    init(directory: URL) throws {
        var sources: [String: String] = [:]
        for file in try FileManager.default.contentsOfDirectory(atPath: directory.path) where file.hasSuffix(".swift") {
            let owner = String(file.dropLast(".swift".count).prefix { $0 != "+" })
            let text = try String(contentsOf: directory.appendingPathComponent(file), encoding: .utf8)
            // Comments name types they only talk about: not a dependency.
            let code = text.split(separator: "\n", omittingEmptySubsequences: false)
                .map { line in line.range(of: "//").map { String(line[..<$0.lowerBound]) } ?? String(line) }
            sources[owner, default: ""] += code.joined(separator: "\n") + "\n"
        }
        let declaration = try Regex(#"(?m)^(?:(?:package|public|private|fileprivate|internal|final)\s+)*(?:class|struct|enum|protocol|actor|typealias)\s+([A-Z][A-Za-z0-9_]*)"#)
        var declaredIn: [String: String] = [:]
        for (owner, code) in sources {
            for match in code.matches(of: declaration) {
                if let name = match.output[1].substring { declaredIn[String(name)] = owner }
            }
        }
        // Whole identifiers (a Unicode word boundary would not split `RecordAPI.routes`).
        let identifier = try Regex(#"[A-Za-z_][A-Za-z0-9_]*"#)
        var edges: [String: Set<String>] = [:]
        for (owner, code) in sources {
            edges[owner] = Set(code.matches(of: identifier).compactMap { declaredIn[String(code[$0.range])] }.filter { $0 != owner })
        }
        self.edges = edges
    }

    /// One cycle, in order, if there is any.
    func cycle() -> [String]? {
        var finished = Set<String>()
        var path: [String] = []
        func visit(_ node: String) -> [String]? {
            if let start = path.firstIndex(of: node) { return Array(path[start...]) }
            guard !finished.contains(node) else { return nil }
            path.append(node)
            for next in (edges[node] ?? []).sorted() {
                if let found = visit(next) { return found }
            }
            path.removeLast()
            finished.insert(node)
            return nil
        }
        for node in edges.keys.sorted() {
            if let found = visit(node) { return found }
        }
        return nil
    }
}
