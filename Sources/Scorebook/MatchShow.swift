import Foundation
import RecordModel

/// `match show`'s output with what the detail of Output.matchDetail leaves out: the rounds grid
/// (`--rounds`).
public enum MatchShow {
    public static func render(_ line: Output.MatchLine, rounds: MatchRounds?, json: Bool) -> String {
        let detail = Output.matchDetail(line, json: json)
        guard let rounds else { return detail }
        if json {
            guard case .object(var members) = try? JSONValue.parse(detail) else { return detail }
            members["rounds"] = rounds.json
            return JSONText.render(.object(members))
        }
        var text = detail + "\n\n" + rounds.table(totals: line.result).rendered
        if rounds.rows.contains(where: { !$0.enteredTwice.isEmpty }) {
            text += "\n(×2): two scores in one round, summed (entered on two machines at once); "
                + "'\(ShellCommand.line(["scorebook", "score", "list", "--match", line.match.recordName]))' shows each"
        }
        return text
    }
}
