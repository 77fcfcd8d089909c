import Foundation
import Testing
import Haul
import HaulCommandLine
import HaulSessions

@Suite struct JSONProgressTests {
    static let nastyNames = [
        "plain.iso", "quote\"d.iso", "back\\slash", "new\nline", "tab\tand\rcr", "nul\u{0}byte", "esc\u{1B}[2J",
        "del\u{7F}", "日本語.zip", "emoji🎉.bin", "line\u{2028}sep", "", "\u{1F}\u{01}", "e\u{301}",
        "\\\"\\\"", "/path/with spaces/x",
    ]

    /// Parses `line` strictly (HaulSessions' RFC 8259 parser, which also refuses a key given twice) and with
    /// JSONSerialization; both must accept it, and it must be an object.
    func parse(_ line: String) throws -> JSONObject {
        #expect(!line.contains("\n"), "one object per line")
        let value = try JSONParser.parseObject(Array(line.utf8))
        let foundation = try JSONSerialization.jsonObject(with: Data(line.utf8))
        #expect(foundation is [String: Any])
        return value
    }

    @Test func progressLinesHaveTheDocumentedFieldsInOrder() throws {
        let line = JSONProgress.progressLine(file: "a.iso", progress: sampleProgress())
        #expect(line == #"{"type":"progress","file":"a.iso","phase":"downloading","bytes":452145152,"total":1073741824,"rate":124151398,"eta":5,"connections":8,"elapsed":42.000}"#)
        let value = try parse(line)
        #expect(value.keys == ["type", "file", "phase", "bytes", "total", "rate", "eta", "connections", "elapsed"])
    }

    @Test func unknownTotalZeroRateAndNoETAAreNullOrZero() throws {
        let line = JSONProgress.progressLine(file: "s", progress: sampleProgress(total: nil, rate: 0, eta: nil))
        let value = try parse(line)
        #expect(value["total"] == .null)
        #expect(value["eta"] == .null)
        #expect(value["rate"] == .number("0"))
        let nan = JSONProgress.progressLine(file: "s", progress: sampleProgress(rate: .nan))
        #expect(try parse(nan)["rate"] == .number("0"))
    }

    @Test func doneAndErrorLines() throws {
        let done = JSONProgress.doneLine(file: "a.iso", path: "/data/a.iso", bytes: 1000, duration: .milliseconds(2_500))
        #expect(done == #"{"type":"done","file":"a.iso","path":"/data/a.iso","bytes":1000,"seconds":2.500,"rate":400}"#)
        let instant = try parse(JSONProgress.doneLine(file: "a", path: "a", bytes: 0, duration: .zero))
        #expect(instant["rate"] == .null)

        let refused = HaulError.network(ConnectionError(kind: .connectFailed, host: "h", port: 1, detail: "refused"))
        let error = try parse(JSONProgress.errorLine(file: "a.iso", error: refused))
        #expect(error["type"] == .string("error"))
        #expect(error["code"] == .number("3"))
        #expect(error["class"] == .string("network"))
        #expect(error["message"] == .string(refused.description))
        #expect(error["transient"] == .bool(true))

        #expect(error["url"] == nil, "no URL known, none invented")
        #expect(error["attempts"] == .number("1"))
        let retried = try parse(JSONProgress.errorLine(file: "a.iso", error: HaulError(refused.reason, url: "http://h:1/a.iso", attempts: 4)))
        #expect(retried["url"] == .string("http://h:1/a.iso"))
        #expect(retried["attempts"] == .number("4"))
        #expect(retried["message"] == .string("http://h:1/a.iso: connect to h:1: refused (after 4 tries)"))

        let checksum = HaulError.checksumMismatch(path: "a\"b", expected: Checksum(algorithm: .sha256, hex: "00"), actual: "11")
        let value = try parse(JSONProgress.errorLine(file: "a\"b", error: checksum))
        #expect(value["code"] == .number("8"))
        #expect(value["class"] == .string("checksum"))
        #expect(value["file"] == .string("a\"b"))

        let interrupted = JSONProgress.errorLine(file: "x", status: .interrupted, message: "interrupted; run again to resume")
        #expect(interrupted == #"{"type":"error","file":"x","code":130,"class":"interrupted","message":"interrupted; run again to resume","transient":false}"#)
    }

    @Test(arguments: nastyNames)
    func nastyNamesRoundTripThroughEveryLine(name: String) throws {
        let lines = [
            JSONProgress.progressLine(file: name, progress: sampleProgress()),
            JSONProgress.doneLine(file: name, path: "/out/" + name, bytes: 5, duration: .seconds(1)),
            JSONProgress.errorLine(file: name, error: HaulError.destinationExists(path: name)),
        ]
        for line in lines {
            let value = try parse(line)
            #expect(value["file"] == .string(name))
            #expect(!line.unicodeScalars.contains { $0.value < 0x20 }, "raw control character in \(line)")
            let foundation = try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any]
            #expect(foundation?["file"] as? String == name)
        }
    }

    @Test func escapesUseTheShortFormsAndLowercaseHex() {
        #expect(JSONObjectWriter.quoted("a\"b\\c\n\r\t\u{08}\u{0C}\u{0}\u{1F}\u{7F}\u{2028}é")
            == "\"a\\\"b\\\\c\\n\\r\\t\\b\\f\\u0000\\u001f\\u007f\\u2028é\"")
    }
}

@Suite struct PlainProgressLineTests {
    @Test func linesReadLikeSentences() {
        #expect(PlainProgressLine.line(name: "file.iso", progress: sampleProgress())
            == "haul: file.iso 42% 431.2 MiB of 1.0 GiB at 118.4 MiB/s, ETA 0:05")
        #expect(PlainProgressLine.line(name: "stream", progress: sampleProgress(total: nil))
            == "haul: stream 431.2 MiB at 118.4 MiB/s, 0:42 elapsed")
        #expect(PlainProgressLine.line(name: "f", progress: sampleProgress(rate: 0, eta: nil))
            == "haul: f 42% 431.2 MiB of 1.0 GiB at 0 B/s, ETA unknown")
        #expect(PlainProgressLine.line(name: "f", progress: sampleProgress(bytesDone: 1 << 30, phase: .completed, elapsed: .seconds(9)))
            == "haul: f 100% 1.0 GiB of 1.0 GiB in 0:09, done")
        #expect(PlainProgressLine.line(name: "f", progress: sampleProgress(phase: .paused)).hasSuffix("paused (run again to resume)"))
        #expect(PlainProgressLine.line(name: "a\nb", progress: sampleProgress()).hasPrefix("haul: a?b 42%"))
    }

    @Test func throttlePrintsEveryIntervalOrPercentStepAndAlwaysTheEnd() {
        var throttle = PlainProgressThrottle(interval: .seconds(5), percentStep: 10)
        var printed = false
        let total: Int64 = 1000
        func at(_ seconds: Int, _ done: Int64, _ phase: DownloadProgress.Phase = .downloading) -> DownloadProgress {
            sampleProgress(total: total, bytesDone: done, phase: phase, elapsed: .seconds(seconds))
        }
        printed = throttle.shouldPrint(at(0, 0)); #expect(!printed)      // the start is not news
        printed = throttle.shouldPrint(at(1, 50)); #expect(!printed)     // same 10% band, 1 s later
        printed = throttle.shouldPrint(at(2, 100)); #expect(printed)     // entered 10%
        printed = throttle.shouldPrint(at(3, 150)); #expect(!printed)
        printed = throttle.shouldPrint(at(6, 190)); #expect(!printed)    // 4 s since the last line
        printed = throttle.shouldPrint(at(7, 195)); #expect(printed)     // 5 s since the last line, even without a new band
        printed = throttle.shouldPrint(at(8, 450)); #expect(printed)     // jumped two bands: one line
        printed = throttle.shouldPrint(at(9, 460)); #expect(!printed)
        printed = throttle.shouldPrint(at(9, 1000, .completed)); #expect(printed)  // always the end
        printed = throttle.shouldPrint(at(9, 1000, .completed)); #expect(!printed) // once
        printed = throttle.shouldPrint(at(20, 1000)); #expect(!printed)
    }

    @Test func throttleWithUnknownTotalUsesTimeOnly() {
        var throttle = PlainProgressThrottle()
        var printed = false
        func at(_ seconds: Int) -> DownloadProgress { sampleProgress(total: nil, elapsed: .seconds(seconds)) }
        printed = throttle.shouldPrint(at(0)); #expect(!printed)
        printed = throttle.shouldPrint(at(4)); #expect(!printed)
        printed = throttle.shouldPrint(at(5)); #expect(printed)
        printed = throttle.shouldPrint(at(9)); #expect(!printed)
        printed = throttle.shouldPrint(at(10), now: .seconds(10)); #expect(printed)
        printed = throttle.shouldPrint(sampleProgress(total: nil, phase: .failed, elapsed: .seconds(10))); #expect(printed)
    }

    @Test func aFinalFirstSnapshotIsPrinted() {
        var throttle = PlainProgressThrottle()
        var printed = false
        printed = throttle.shouldPrint(sampleProgress(phase: .cancelled, elapsed: .zero)); #expect(printed)
    }
}
