import Logging
import Synchronization

/// A `LogHandler` that keeps every record, for tests to read back.
public struct CapturingLogHandler: LogHandler {
    public struct Record: Sendable {
        public var level: Logger.Level
        public var message: String
        /// The logger's metadata merged with the record's.
        public var metadata: [String: String]
    }

    public final class Store: Sendable {
        public init() {}
        private let records = Mutex<[Record]>([])
        public var all: [Record] { records.withLock { $0 } }
        public func append(_ record: Record) { records.withLock { $0.append(record) } }
        public func with(_ message: String) -> [Record] { all.filter { $0.message == message } }
    }

    public let store: Store
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?
    public var logLevel: Logger.Level = .trace

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        let merged = metadata.merging(event.metadata ?? [:]) { $1 }
        store.append(Record(level: event.level, message: event.message.description, metadata: merged.mapValues { "\($0)" }))
    }

    /// A logger at `level` whose records land in `store`.
    public static func logger(_ store: Store, level: Logger.Level = .trace) -> Logger {
        var logger = Logger(label: "haul.tests", factory: { _ in CapturingLogHandler(store: store) })
        logger.logLevel = level
        return logger
    }
}
