import Foundation
import XCTest

/// Every module under `Sources/` keeps the dependencies between its files one-directional: in the
/// daemon's HTTP side (`Sources/RecordServer`) the adapter depends on the API, the API on the push
/// hub, the hub on nothing of either; in the store the backends depend on the engine, the engine
/// on the rules and types. A file depends on another when it names a type declared at the top
/// level of the other; a type's extension files (`RecordAPI+Records.swift`) count as the type's
/// own file, and a module's subfolders (`Engine/`) are part of it.
final class SourceFileGraphTests: XCTestCase {
    static let sources = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        .appendingPathComponent("Sources")

    func testTheServerFilesHaveNoDependencyCycle() throws {
        let graph = try SourceFileGraph(directory: Self.sources.appendingPathComponent("RecordServer"))
        XCTAssertGreaterThan(graph.edges.count, 10, "the sources were read")
        XCTAssertTrue(graph.edges["HTTPServer"]?.contains("RecordAPI") == true, "references are found: the adapter uses the API")
        XCTAssertNil(graph.cycle(), "a dependency cycle: \(graph.cycle()?.joined(separator: " -> ") ?? "")")
    }

    func testNoModuleHasADependencyCycle() throws {
        let modules = try FileManager.default.contentsOfDirectory(atPath: Self.sources.path).sorted()
        XCTAssertTrue(modules.contains("RecordStore") && modules.contains("SQLiteRecordStore"), "the modules were listed")
        for module in modules {
            let graph = try SourceFileGraph(directory: Self.sources.appendingPathComponent(module))
            XCTAssertNil(graph.cycle(), "a dependency cycle in \(module): \(graph.cycle()?.joined(separator: " -> ") ?? "")")
        }
        let store = try SourceFileGraph(directory: Self.sources.appendingPathComponent("RecordStore"))
        XCTAssertTrue(store.edges["StoreEngine"]?.contains("StoreDriver") == true, "a subfolder's files are read: the engine uses its driver")
    }

    /// The checker itself: a cycle of three is found, a chain is not one.
    func testACycleIsFound() throws {
        var graph = SourceFileGraph(edges: ["A": ["B"], "B": ["C"], "C": []])
        XCTAssertNil(graph.cycle())
        graph.edges["C"] = ["A"]
        XCTAssertEqual(graph.cycle().map(Set.init), Set(["A", "B", "C"]))
    }
}

/// Which source file (by type: `Type.swift` with its `Type+Feature.swift`) names a type another declares.
struct SourceFileGraph {
    var edges: [String: Set<String>]

    init(edges: [String: Set<String>]) { self.edges = edges }

    /// The Swift files of `directory` and its subfolders.
    init(directory: URL) throws {
        var sources: [String: String] = [:]
        let files = FileManager.default.enumerator(atPath: directory.path)?.compactMap { $0 as? String } ?? []
        for path in files.sorted() where path.hasSuffix(".swift") {
            let file = (path as NSString).lastPathComponent
            let owner = String(file.dropLast(".swift".count).prefix { $0 != "+" })
            let text = try String(contentsOf: directory.appendingPathComponent(path), encoding: .utf8)
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
