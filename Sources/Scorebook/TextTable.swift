/// A plain text table: a header row and left-aligned columns two spaces apart. Cells are shown
/// with their control characters escaped (a name from another machine cannot move the cursor or
/// break a row), and columns are padded by display width, so CJK text and emoji (two columns
/// each) and combining marks (none) line up.
public struct TextTable: Equatable, Sendable {
    public var headers: [String]
    public var rows: [[String]]

    public init(headers: [String], rows: [[String]]) {
        self.headers = headers
        self.rows = rows
    }

    public var rendered: String {
        let all = ([headers] + rows).map { row in row.map(DisplayText.escapingControls) }
        let cellWidths = all.map { row in row.map(DisplayText.width) }
        let widths = headers.indices.map { column in
            cellWidths.map { $0.indices.contains(column) ? $0[column] : 0 }.max() ?? 0
        }
        return all.indices.map { line in
            let row = all[line]
            return headers.indices.map { column -> String in
                let cell = row.indices.contains(column) ? row[column] : ""
                guard column < headers.count - 1 else { return cell }
                let width = row.indices.contains(column) ? cellWidths[line][column] : 0
                return cell + String(repeating: " ", count: widths[column] - width)
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
