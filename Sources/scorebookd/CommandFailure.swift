/// A failure to report as one plain line.
struct CommandFailure: Error {
    var message: String
}
