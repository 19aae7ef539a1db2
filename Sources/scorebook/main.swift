import ArgumentParser
import Foundation
import Scorebook

/// Parses and runs one command. Every failure ends as one line on standard error and a non-zero
/// status: 2 for a REF that names nothing or several things, 64 for bad usage, 1 otherwise.
func runScorebook(_ arguments: [String]) async -> Int32 {
    do {
        let arguments = GlobalOptions.movingLeadingOptions(arguments)
        if let problem = CommandSuggestion.problem(in: arguments) {
            warn("error: " + problem)
            return ExitCode.validationFailure.rawValue
        }
        var command = try ScorebookCommand.parseAsRoot(arguments)
        if var asyncCommand = command as? AsyncParsableCommand {
            try await asyncCommand.run()
        } else {
            try command.run()
        }
        return 0
    } catch let error as ScorebookError {
        warn("error: " + oneLine(error.description))
        return error.exitCode
    } catch {
        let status = ScorebookCommand.exitCode(for: error)
        if status == .success {
            // --help and the like.
            emit(ScorebookCommand.fullMessage(for: error))
            return 0
        }
        let message = ScorebookCommand.message(for: error)
        warn("error: " + oneLine(message.isEmpty ? String(describing: error) : message))
        return status.rawValue == 0 ? 1 : status.rawValue
    }
}

func oneLine(_ text: String) -> String {
    text.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        .joined(separator: "; ")
        .replacingOccurrences(of: "Error: ", with: "")
}

InterruptHandling.install()
exit(await runScorebook(Array(CommandLine.arguments.dropFirst())))
