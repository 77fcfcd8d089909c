import Logging
import Synchronization
import Testing
@testable import HaulSessions

/// The engine's notices for a daemon's task go to the daemon's own log, one line each, metadata sorted,
/// control characters from a server neutralised.
@Suite struct DaemonLogHandlerTests {
    @Test func aNoticeIsOneSanitizedLineOfTheDaemonsLog() {
        let lines = Mutex<[String]>([])
        var logger = DaemonLogHandler.logger(level: .notice) { line in lines.withLock { $0.append(line) } }
        logger[metadataKey: "haul.task"] = "3"
        logger.info("dropped")
        logger.notice("mirror dropped\r\nfake line", metadata: ["haul.url": "http://m/\u{1B}[2J"])
        #expect(lines.withLock { $0 } == ["notice: mirror dropped??fake line haul.task=3 haul.url=http://m/?[2J"])
    }
}
