import Foundation
import Testing
import Haul
import HaulCommandLine

/// The pure pieces behind the CLI's habits: version, default scheme, `--limit-rate 0`, error wording,
/// already-complete files, the second interrupt's line.
@Suite struct CLIHabitsTests {
    @Test func versionIsOneNumberAndALineAboutTheBuild() {
        #expect(HaulVersion.number.wholeMatch(of: /\d+\.\d+\.\d+/) != nil)
        #expect(HaulVersion.userAgent == "haul/" + HaulVersion.number)
        let lines = HaulVersion.versionText.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines[0] == "haul " + HaulVersion.number)
        #expect(lines[1].hasPrefix("built with Swift 6."), "\(lines[1])")
        #expect(lines[1].contains("Linux"))
    }

    @Test(arguments: [
        ("127.0.0.1:8765/f.bin", "http://127.0.0.1:8765/f.bin"),
        ("example.org/x", "http://example.org/x"),
        ("example.org", "http://example.org"),
        ("localhost:8080", "http://localhost:8080"),
        ("[::1]:8080/a", "http://[::1]:8080/a"),
        ("user@example.org/a", "http://user@example.org/a"),
        ("//example.org/a", "http://example.org/a"),
        ("  example.org/a\t", "http://example.org/a"),
        ("http://example.org/a", "http://example.org/a"),
        ("HTTPS://example.org/a", "HTTPS://example.org/a"),
        ("ftp://example.org/a", "ftp://example.org/a"),
        ("", ""),
    ])
    func aURLWithoutASchemeGetsHTTP(typed: String, expected: String) {
        #expect(URLText.withDefaultScheme(typed) == expected)
    }

    @Test func defaultedURLsParseAndUnknownSchemesStillFail() throws {
        let url = try HTTPURL(URLText.withDefaultScheme("127.0.0.1:8765/f.bin"))
        #expect(url.scheme == .http && url.port == 8765 && url.path == "/f.bin")
        #expect(throws: URLParseError.self) { try HTTPURL(URLText.withDefaultScheme("ftp://example.org/a")) }
    }

    @Test(arguments: [
        ("http://h/a/b/file.iso", "file.iso"),
        ("http://h/a/report%202026.pdf?x=1", "report 2026.pdf"),
        ("http://h/", "index.html"),
        ("http://h", "index.html"),
        ("http://h/dir/", "index.html"),
        ("http://h/..%2F..%2Fetc%2Fpasswd", "_.._etc_passwd"),
        ("http://h/.hidden", "hidden"),
    ])
    func theNameAFileGetsFromItsURL(url: String, name: String) {
        #expect(URLText.fileName(forURL: url) == name)
    }

    @Test func inputFilesTakeURLsWithoutASchemeAndQueriesWithEquals() throws {
        let entries = try InputFile.parse("example.org/a?x=1\tmirror.example/a\tout=a.bin\n")
        #expect(entries == [InputEntry(url: "http://example.org/a?x=1", mirrors: ["http://mirror.example/a"], outputName: "a.bin", line: 1)])
        #expect(throws: InputFileError(line: 1, reason: .unknownOption("dir"))) { try InputFile.parse("example.org/a\tdir=x") }
    }

    @Test func limitRateZeroIsUnlimited() throws {
        for zero in ["0", "0K", "0.0M", "0/s", "00", " 0 "] {
            #expect(try RateLimitSetting.parse(zero) == .unlimited, "\(zero)")
            #expect(RateLimitSetting(zero)?.bytesPerSecond == nil, "\(zero)")
        }
        #expect(try RateLimitSetting.parse("500K").bytesPerSecond == 500 * 1024)
        #expect(try RateLimitSetting.parse("10M/s").bytesPerSecond == 10 << 20)
        for bad in ["0.1B", "-1", "fast", "", "."] {
            #expect(RateLimitSetting(bad) == nil, "\(bad)")
        }
        #expect(throws: ByteSizeError(text: "0.1B", reason: .notPositive)) { try RateLimitSetting.parse("0.1B") }
    }

    @Test func theCLINamesItsOwnOptionsForAnExistingFile() {
        let message = ErrorText.message(for: HaulError.destinationExists(path: "out/a.iso"), source: .commandLine)
        #expect(message == "out/a.iso already exists (use --allow-overwrite to replace it, or --skip-existing)")
        #expect(!message.contains("pass replace"))
    }

    @Test func theCLIAddsItsHintsToTheEnginesWordsWhichNameTheURLAndTheTries() {
        let url = "https://files.example/a.iso"
        let refused = HaulError(.network(ConnectionError(kind: .connectFailed, host: "files.example", port: 443, detail: "refused")),
                                url: url, attempts: 3)
        #expect(ErrorText.message(for: refused, source: .commandLine)
            == "\(url): connect to files.example:443: refused (after 3 tries)")
        let journal = HaulError(.journal(JournalError.io(call: "read", errno: .ioError, path: "a.iso.part.haul")), url: url)
        #expect(!journal.description.contains("--restart"), "the engine's words name no option")
        #expect(ErrorText.message(for: journal, source: .commandLine) == "\(journal) (pass --restart to discard the partial download)")
        let mismatch = HaulError(.partialDownloadMismatch(path: "a.iso.part", detail: "it belongs to another URL"), url: url)
        #expect(!mismatch.description.contains("--restart"))
        #expect(ErrorText.message(for: mismatch, source: .inputFile)
            == "a.iso.part: it belongs to another URL (pass --restart to discard it)")
    }

    @Test func aMirrorMismatchSaysHowToDownloadDifferentFiles() {
        let mismatch = HaulError.mirrorMismatch(url: "http://b/x", detail: "length 10, expected 20")
        #expect(ErrorText.message(for: mismatch, source: .commandLine)
            == "mirror http://b/x disagrees: length 10, expected 20; if these are different files, use -Z (or -i)")
        #expect(ErrorText.message(for: mismatch, source: .inputFile).hasSuffix("put each on its own line of the input file"))
        #expect(ErrorText.message(for: mismatch, source: .parallel) == mismatch.description)
        let other = HaulError.httpStatus(status: 404, reason: "Not Found", url: "u")
        #expect(ErrorText.message(for: other, source: .commandLine) == other.description)
    }

    @Test func everyLineHasTheHaulPrefixOnce() {
        #expect(ErrorText.line("x failed") == "haul: x failed")
        #expect(ErrorText.line("haul: x failed") == "haul: x failed")
        #expect(ErrorText.line("haul: haul: x") == "haul: x")
        #expect(ErrorText.line("two\nlines\u{1B}[2J") == "haul: two?lines?[2J")
    }

    @Test func parserMessagesBecomeOneLowercaseLine() {
        #expect(ErrorText.parserMessage("Error: Unknown option '--x'\nUsage: haul [<options>]\n  See 'haul --help'.")
            == "unknown option '--x'; Usage: haul [<options>]; See 'haul --help'.")
        #expect(ErrorText.parserMessage("The value 'a' is invalid for '-c <connections>'") == "the value 'a' is invalid for '-c <connections>'")
        #expect(ErrorText.parserMessage("URL missing") == "URL missing", "an acronym keeps its case")
    }

    @Test func whenAnExistingFileCountsAsAlreadyComplete() {
        func verdict(exists: Bool, partial: Bool = false, skip: Bool = false, list: Bool = false, overwrite: Bool = false) -> ExistingDestination.Verdict {
            ExistingDestination.verdict(destinationExists: exists, interruptedDownloadExists: partial, skipExisting: skip,
                                        fromInputFile: list, allowOverwrite: overwrite)
        }
        #expect(verdict(exists: false, skip: true, list: true) == .download)
        #expect(verdict(exists: true) == .download, "the engine refuses it: exit 9")
        #expect(verdict(exists: true, skip: true) == .alreadyComplete)
        #expect(verdict(exists: true, partial: true, skip: true) == .alreadyComplete)
        #expect(verdict(exists: true, list: true) == .alreadyComplete)
        #expect(verdict(exists: true, partial: true, list: true) == .download, "an interrupted download beside it: the engine decides")
        #expect(verdict(exists: true, list: true, overwrite: true) == .download)
    }

    @Test func skippedFilesAreDoneLinesMarkedSkipped() throws {
        let line = JSONProgress.skippedLine(file: "a.iso", path: "d/a.iso", bytes: 1000)
        #expect(line == #"{"type":"done","file":"a.iso","path":"d/a.iso","bytes":1000,"seconds":0.000,"rate":null,"skipped":true}"#)
        let object = try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])
        #expect(object["skipped"] as? Bool == true)
    }

    @Test func usageErrorsInJSONHaveANullFile() throws {
        let line = JSONProgress.errorLine(file: nil, status: .usage, message: "bad")
        #expect(line == #"{"type":"error","file":null,"code":2,"class":"usage","message":"bad","transient":false}"#)
        let replaced = JSONProgress.errorLine(file: "a", error: HaulError.destinationExists(path: "a"), message: "mine")
        #expect(replaced.contains(#""message":"mine""#) && replaced.contains(#""code":9"#))
    }

    @Test func theSecondInterruptLinesAreConstantAndSayTheSameThing() throws {
        func text(_ line: StaticString) -> String { line.withUTF8Buffer { String(decoding: $0, as: UTF8.self) } }
        let message = InterruptText.secondInterruptMessage
        #expect(text(InterruptText.secondInterruptLine) == "haul: " + message + "\n")
        #expect(text(InterruptText.secondInterruptTerminalLine) == "\r\u{1B}[K" + "haul: " + message + "\n")
        let json = text(InterruptText.secondInterruptJSONLine)
        #expect(json == JSONProgress.errorLine(file: nil, status: .interrupted, message: message, transient: true) + "\n")
        #expect(message.contains("journal") && message.contains("exiting now"))
    }

    /// `--speed-limit`/`--speed-time` as `haul` and `haul queue add` take them: the engine's default unless
    /// given, the default for a half left out, and 0 (either) to turn the limit off.
    @Test func theLowSpeedOptionsDefaultToTheEnginesAndZeroTurnsThemOff() throws {
        #expect(try LowSpeedLimit.commandLine(speedLimit: nil, speedTime: nil) == .standard)
        #expect(try LowSpeedLimit.commandLine(speedLimit: RateLimitSetting("10K"), speedTime: nil)
            == LowSpeedLimit(bytesPerSecond: 10 << 10, seconds: LowSpeedLimit.standard.seconds))
        #expect(try LowSpeedLimit.commandLine(speedLimit: nil, speedTime: 120)
            == LowSpeedLimit(bytesPerSecond: LowSpeedLimit.standard.bytesPerSecond, seconds: 120))
        #expect(try LowSpeedLimit.commandLine(speedLimit: RateLimitSetting("0"), speedTime: nil) == nil)
        #expect(try LowSpeedLimit.commandLine(speedLimit: RateLimitSetting("1K"), speedTime: 0) == nil)
        #expect(throws: LowSpeedSettingError.self) { try LowSpeedLimit.commandLine(speedLimit: nil, speedTime: -1) }
        #expect(WaitOptionHelp.speedLimit.contains("default 100") && WaitOptionHelp.speedTime.contains("default 60"))
        #expect(WaitOptionHelp.retryAfter.contains("up to 60 s"))
        let slow = HaulError(.belowSpeedLimit(url: "http://h/f", limit: .standard), url: "http://h/f", attempts: 5)
        #expect(ErrorText.message(for: slow, source: .commandLine) == "\(slow) (--speed-limit and --speed-time set the limit; --speed-limit 0 turns it off)")
        let asked = HaulError(.retryAfterTooLong(url: "http://h/f", status: 503, asked: .seconds(3600), limit: .seconds(60)), url: "http://h/f")
        #expect(ErrorText.message(for: asked, source: .commandLine).hasPrefix("http://h/f answered HTTP 503 asking to retry after 3600 s, longer than the 60 s allowed to wait ("))
    }
}
