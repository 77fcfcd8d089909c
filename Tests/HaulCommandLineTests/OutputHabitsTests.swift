import Foundation
import Testing
import Haul
import HaulCommandLine
import HaulSessions

/// curl's `-w` formatter, the JSON lines' download identity, the advice in 401 and exit-7 messages, and
/// `--max-filesize`'s exit code.
@Suite struct WriteOutFormatTests {
    static let facts = WriteOutFacts(
        httpCode: 206, sizeDownload: 1_000_000, timeTotal: 2, urlEffective: "https://cdn.example/a.iso",
        url: "https://example.org/a.iso", filenameEffective: "out/a.iso", contentType: "application/x-iso9660-image",
        numRedirects: 1, exitCode: 0, errorMessage: nil)

    @Test func everyVariableIsReplacedAndTheRestIsKept() throws {
        let format = try WriteOutFormat(
            "%{http_code} %{response_code} %{size_download} %{speed_download} %{time_total} %{url_effective} %{url} "
                + "%{filename_effective} %{content_type} %{num_redirects} %{exitcode} [%{errormsg}]")
        #expect(format.render(Self.facts) == "206 206 1000000 500000 2.000000 https://cdn.example/a.iso https://example.org/a.iso "
            + "out/a.iso application/x-iso9660-image 1 0 []")
    }

    @Test func escapesAndPercentSignsAreCurls() throws {
        #expect(try WriteOutFormat("%%{http_code}\\n").render(Self.facts) == "%{http_code}\n")
        #expect(try WriteOutFormat("a\\tb\\r\\\\c\\q 50% %d").render(Self.facts) == "a\tb\r\\c\\q 50% %d")
        #expect(try WriteOutFormat("").render(Self.facts) == "")
        #expect(try WriteOutFormat("%").render(Self.facts) == "%")
    }

    @Test func noResponseIsCode000AndAFailureHasItsMessage() throws {
        var failed = Self.facts
        failed.httpCode = nil
        failed.exitCode = 3
        failed.errorMessage = "connect to h:80: Connection refused"
        #expect(try WriteOutFormat("%{http_code} %{exitcode} %{errormsg}").render(failed) == "000 3 connect to h:80: Connection refused")
        failed.httpCode = 7
        #expect(try WriteOutFormat("%{http_code}").render(failed) == "007")
    }

    @Test func jsonHoldsEveryVariableInNameOrder() throws {
        let line = try WriteOutFormat("%{json}").render(Self.facts)
        let object = try JSONParser.parseObject(Array(line.utf8))
        #expect(object.keys == ["content_type", "errormsg", "exitcode", "filename_effective", "http_code", "num_redirects",
                                "response_code", "size_download", "speed_download", "time_total", "url", "url_effective"])
        #expect(object["http_code"] == .number("206"))
        #expect(object["errormsg"] == .null)
        #expect(object["url_effective"] == .string("https://cdn.example/a.iso"))
        _ = try JSONSerialization.jsonObject(with: Data(line.utf8))
    }

    @Test func anUnknownVariableIsRefusedNamingItAndTheKnownOnes() {
        #expect(throws: WriteOutFormatError(kind: .unknownVariable, text: "http_cod")) { try WriteOutFormat("%{http_cod}") }
        do {
            _ = try WriteOutFormat("x %{stderr} y")
            Issue.record("an unknown variable must not pass")
        } catch {
            #expect(error.description.contains("%{stderr}") && error.description.contains("%{http_code}"), "\(error)")
        }
    }

    @Test func anUnterminatedVariableIsRefused() {
        #expect(throws: WriteOutFormatError(kind: .unterminated, text: "%{http_code")) { try WriteOutFormat("code: %{http_code") }
        #expect(throws: WriteOutFormatError.self) { try WriteOutFormat("%{") }
    }
}

@Suite struct OutputHabitMessagesTests {
    @Test func jsonLinesCarryTheDownloadsIdAndURL() throws {
        let progress = JSONProgress.progressLine(file: "a.iso", progress: sampleProgress(), id: 3, url: "http://h/a.iso")
        let object = try JSONParser.parseObject(Array(progress.utf8))
        #expect(object.keys.prefix(4) == ["type", "id", "url", "file"])
        #expect(object["id"] == .number("3") && object["url"] == .string("http://h/a.iso"))
        let done = try JSONParser.parseObject(Array(JSONProgress.doneLine(file: "a", path: "a", bytes: 1, duration: .seconds(1), id: 3, url: "http://h/a").utf8))
        #expect(done["id"] == .number("3") && done["url"] == .string("http://h/a"))
        let skipped = try JSONParser.parseObject(Array(JSONProgress.skippedLine(file: "a", path: "a", bytes: 1, id: 4, url: "http://h/a").utf8))
        #expect(skipped["id"] == .number("4"))
        let error = try JSONParser.parseObject(Array(JSONProgress.errorLine(file: "a", error: HaulError.cancelled, id: 5).utf8))
        #expect(error["id"] == .number("5"))
        // Without an id (a usage error, or a caller that gives none), the line is as before.
        let usage = try JSONParser.parseObject(Array(JSONProgress.errorLine(file: nil, status: .usage, message: "x").utf8))
        #expect(usage["id"] == nil && usage["url"] == nil)
    }

    @Test func a401SaysHowToGiveCredentials() {
        let error = HaulError(.httpStatus(status: 401, reason: "Unauthorized", url: "http://h/p"), url: "http://h/p")
        let message = ErrorText.message(for: error, source: .commandLine)
        #expect(message.contains("401") && message.contains("-u USER") && message.contains("--netrc"), "\(message)")
        let notFound = ErrorText.message(for: HaulError(.httpStatus(status: 404, reason: "Not Found", url: "u")), source: .commandLine)
        #expect(!notFound.contains("-u USER"), "\(notFound)")
    }

    @Test func aChangedFileSaysOnChangeRestart() {
        let error = HaulError(.changedOnServer(url: "http://h/f", detail: "ETag changed"), url: "http://h/f")
        let message = ErrorText.message(for: error, source: .commandLine)
        #expect(message.contains("--on-change restart"), "\(message)")
        #expect(ExitStatus(classifying: error) == .changedOnServer)
    }

    @Test func overMaxFilesizeIsItsOwnExitCodeAndNamesURLSizeAndLimit() {
        let announced = HaulError(.responseTooLarge(url: "http://h/big", limit: 1000, length: 5000), url: "http://h/big")
        #expect(ExitStatus(classifying: announced).code == 63)
        #expect(ExitStatus(classifying: announced).className == "too-large")
        let message = ErrorText.message(for: announced, source: .commandLine)
        #expect(message.contains("http://h/big") && message.contains("5000") && message.contains("--max-filesize 1000"), "\(message)")
        let grown = ErrorText.message(for: HaulError(.responseTooLarge(url: "http://h/c", limit: 1000, length: nil)), source: .commandLine)
        #expect(grown.contains("http://h/c") && grown.contains("1000") && grown.contains("nothing was saved"), "\(grown)")
    }

    @Test func wgetsWaitAndRecursionAreAnsweredCurlsFormatsAndRangesAreNot() {
        #expect(CommandLineHabits.answer(for: ["-w", "5", "http://h/x"])?.contains("--write-out") == true)
        #expect(CommandLineHabits.answer(for: ["--wait=2", "http://h/x"])?.contains("--write-out") == true)
        #expect(CommandLineHabits.answer(for: ["-r", "http://h/"])?.contains("recursive") == true)
        #expect(CommandLineHabits.answer(for: ["-w", "%{http_code}\\n", "http://h/x"]) == nil)
        #expect(CommandLineHabits.answer(for: ["-w%{json}", "http://h/x"]) == nil)
        #expect(CommandLineHabits.answer(for: ["-r", "0-99", "http://h/x"]) == nil)
        #expect(CommandLineHabits.answer(for: ["-r", "-500", "http://h/x"]) == nil)
        #expect(CommandLineHabits.answer(for: ["--compressed", "http://h/x"]) == nil, "accepted, no longer answered")
    }
}
