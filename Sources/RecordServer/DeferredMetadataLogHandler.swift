import Logging

/// A log handler that formats its metadata only when it writes a line. The framework gives each
/// request a logger with the request's id set as metadata, and swift-log's stream handler
/// formats all of its metadata again on every such set: a few microseconds a request, for lines
/// that are almost never written. The lines are the wrapped handler's, unchanged.
struct DeferredMetadataLogHandler: LogHandler {
    private var wrapped: any LogHandler
    var metadata: Logger.Metadata

    init(wrapping handler: any LogHandler) {
        wrapped = handler
        metadata = handler.metadata
        wrapped.metadata = [:]
    }

    var logLevel: Logger.Level {
        get { wrapped.logLevel }
        set { wrapped.logLevel = newValue }
    }

    var metadataProvider: Logger.MetadataProvider? {
        get { wrapped.metadataProvider }
        set { wrapped.metadataProvider = newValue }
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var event = event
        if !metadata.isEmpty { event.metadata = metadata.merging(event.metadata ?? [:]) { _, explicit in explicit } }
        wrapped.log(event: event)
    }
}

extension Logger {
    /// This logger with its metadata formatted only when a line is written.
    package var formattingMetadataWhenWritten: Logger {
        var logger = self
        logger.handler = DeferredMetadataLogHandler(wrapping: handler)
        return logger
    }
}
