import Glibc
import Logging

/// `haul --verbose`: the engine's log records on standard error, one line each —
/// `haul: debug: sending request haul.range=bytes=0- haul.url=http://…` — metadata sorted by key, control
/// characters (a server's header text, a file name) replaced by `?`.
///
/// Each line goes out in one `write`, so lines from the event loop and the progress printer do not mix
/// within a line. The write blocks like every other write to standard error; that is the price of asking for
/// it, and without `--verbose` the engine's default logger drops records before they are built.
public struct StandardErrorLogHandler: LogHandler {
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level

    public init(level: Logger.Level = .debug) {
        logLevel = level
    }

    /// A logger that writes `level` and above to standard error.
    public static func logger(level: Logger.Level = .debug) -> Logger {
        var logger = Logger(label: "haul", factory: { _ in StandardErrorLogHandler(level: level) })
        logger.logLevel = level
        return logger
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get() { merged.merge(provided) { $1 } }
        if let own = event.metadata { merged.merge(own) { $1 } }
        var line = Self.line(level: event.level, message: event.message.description, metadata: merged)
        line.withUTF8 { bytes in
            var offset = 0
            while offset < bytes.count {
                let written = write(2, bytes.baseAddress! + offset, bytes.count - offset)
                if written < 0 && errno == EINTR { continue }
                guard written > 0 else { return }
                offset += written
            }
        }
    }

    /// The text of one record, with its newline.
    public static func line(level: Logger.Level, message: String, metadata: Logger.Metadata) -> String {
        var line = "haul: \(level): \(TerminalText.sanitized(message))"
        for key in metadata.keys.sorted() {
            line += " \(TerminalText.sanitized(key))=\(TerminalText.sanitized("\(metadata[key]!)"))"
        }
        return line + "\n"
    }
}
