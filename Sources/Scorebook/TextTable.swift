/// A plain text table: a header row and left-aligned columns two spaces apart.
public struct TextTable: Equatable, Sendable {
    public var headers: [String]
    public var rows: [[String]]

    public init(headers: [String], rows: [[String]]) {
        self.headers = headers
        self.rows = rows
    }

    public var rendered: String {
        let all = [headers] + rows
        let widths = headers.indices.map { column in all.map { $0.indices.contains(column) ? $0[column].count : 0 }.max() ?? 0 }
        return all.map { row in
            headers.indices.map { column -> String in
                let cell = row.indices.contains(column) ? row[column] : ""
                guard column < headers.count - 1 else { return cell }
                return cell + String(repeating: " ", count: widths[column] - cell.count)
            }
            .joined(separator: "  ")
            .trimmingTrailingSpaces()
        }
        .joined(separator: "\n")
    }
}

extension String {
    func trimmingTrailingSpaces() -> String {
        var text = self
        while text.last == " " { text.removeLast() }
        return text
    }
}
