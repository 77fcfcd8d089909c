import Logging

/// The engine's log records for a daemon's task, as lines of the daemon's own log
/// (``DaemonConfiguration/log``): `notice: MESSAGE key=value ...`, metadata sorted by key, control characters
/// (a server's header text, a file name) replaced by `?`.
struct DaemonLogHandler: LogHandler {
    var metadata: Logger.Metadata = [:]
    var metadataProvider: Logger.MetadataProvider?
    var logLevel: Logger.Level
    let log: @Sendable (String) -> Void

    /// A logger that passes `level` and above to `log`.
    static func logger(level: Logger.Level, log: @escaping @Sendable (String) -> Void) -> Logger {
        var logger = Logger(label: "haul.session", factory: { _ in DaemonLogHandler(logLevel: level, log: log) })
        logger.logLevel = level
        return logger
    }

    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        log(Self.line(level: event.level, message: event.message.description, metadata: merged))
    }

    static func line(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var line = "\(level): \(sanitized(message))"
        for key in metadata.keys.sorted() {
            line += " \(sanitized(key))=\(sanitized("\(metadata[key]!)"))"
        }
        return line
    }

    static func sanitized(_ text: String) -> String {
        String(String.UnicodeScalarView(text.unicodeScalars.map { $0.value < 0x20 || $0.value == 0x7F ? "?" : $0 }))
    }
}
