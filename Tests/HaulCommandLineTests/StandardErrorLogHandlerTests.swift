import Logging
import Testing
import HaulCommandLine

/// `haul -v`'s lines: level, message, metadata sorted by key, and nothing a server sent can drive the terminal.
@Suite struct StandardErrorLogHandlerTests {
    @Test func aRecordIsOneLineWithSortedMetadata() {
        let line = StandardErrorLogHandler.line(level: .debug, message: "sending request",
                                                metadata: ["haul.url": "http://h/f", "haul.connection": "0", "haul.range": "bytes=0-"])
        #expect(line == "haul: debug: sending request haul.connection=0 haul.range=bytes=0- haul.url=http://h/f\n")
    }

    @Test func controlCharactersFromAServerAreReplaced() {
        let line = StandardErrorLogHandler.line(level: .debug, message: "received response head",
                                                metadata: ["haul.content_range": "bytes 0-1/2\u{1B}[2J\nfake: line"])
        #expect(line == "haul: debug: received response head haul.content_range=bytes 0-1/2?[2J?fake: line\n")
        #expect(line.filter { $0 == "\n" }.count == 1)
    }

    @Test func theLoggerStopsBelowItsLevel() {
        let logger = StandardErrorLogHandler.logger(level: .debug)
        #expect(logger.logLevel == .debug)
        #expect(StandardErrorLogHandler.logger(level: .notice).logLevel == .notice)
    }
}
