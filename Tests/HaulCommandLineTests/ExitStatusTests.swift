import Testing
import Haul
@testable import HaulIO  // TLSSetupError has no public initializer
@testable import HaulCommandLine  // ExitStatus.wrapped
import HaulHTTP  // SplitMixGenerator

@Suite struct ExitStatusTests {
    static let url = try! HTTPURL("https://files.example/a.iso")
    static let journalError = JournalError.io(call: "write", errno: .noSpace, path: "/tmp/a.iso.haul")
    static func connection(_ kind: ConnectionError.Kind) -> ConnectionError {
        ConnectionError(kind: kind, host: "files.example", port: 443)
    }

    /// One representative error of every class, with the code it must exit with.
    static let representatives: [(HaulError, Int32, String)] = [
        (.unexpected("bug"), 1, "unexpected"),
        (.invalidURL(URLParseError(.missingHost, input: "http://")), 2, "usage"),
        (.invalidRequest(RequestHeadError(.invalidHeaderValue(name: "X"))), 2, "usage"),
        (.network(connection(.resolutionFailed)), 3, "network"),
        (.network(connection(.connectFailed)), 3, "network"),
        (.network(connection(.ioFailure)), 3, "network"),
        (.network(connection(.idleTimedOut)), 3, "network"),
        (.timedOut(after: .seconds(60), url: "u", bytesReceived: 1), 3, "network"),
        (.incomplete(url: "u", expected: 10, received: 5), 3, "network"),
        (.truncatedTLS(server: "files.example:443", bytesReceived: 5), 3, "network"),
        (.malformedResponse(HTTPParseError(.connectionClosedBeforeResponse, offset: 0), server: "s"), 3, "network"),
        (.tls(connection(.tlsHandshakeFailed)), 4, "tls"),
        (.tlsSetup(TLSSetupError(reason: "cannot read CA file")), 4, "tls"),
        (.httpStatus(status: 404, reason: "Not Found", url: "u"), 5, "http"),
        (.redirect(RedirectError(.tooMany(limit: 10), at: url)), 5, "http"),
        (.retryAfterTooLong(url: "u", status: 503, asked: .seconds(3600), limit: .seconds(60)), 5, "http"),
        (.malformedResponse(HTTPParseError(.bareLF, offset: 17), server: "s"), 6, "protocol"),
        (.wrongContentRange(url: "u", requested: "0-9", received: "bytes 5-9/10"), 6, "protocol"),
        (.mirrorMismatch(url: "u", detail: "length"), 6, "protocol"),
        (.sizeMismatch(url: "u", expected: 2, served: 1), 6, "protocol"),
        (.faultyResponse(url: "u", detail: "the body ran past the range"), 6, "protocol"),
        (.belowSpeedLimit(url: "u", limit: LowSpeedLimit(bytesPerSecond: 10, seconds: 3)), 3, "network"),
        (.destinationBusy(path: "a.iso", holder: 42), 9, "disk"),
        (.changedOnServer(url: "u", detail: "ETag"), 7, "changed"),
        (.partialDownloadMismatch(path: "a.iso", detail: "other URL"), 7, "changed"),
        (.checksumMismatch(path: "a.iso", expected: Checksum(algorithm: .sha256, hex: "00"), actual: "11"), 8, "checksum"),
        (.disk(path: "a.iso", SystemError(call: "pwrite", errno: 5)), 9, "disk"),
        (.insufficientSpace(path: "a.iso", needed: 10, available: 1), 9, "disk"),
        (.responseTooLarge(url: "u", limit: 10, length: 20), 63, "too-large"),
        (.destinationExists(path: "a.iso"), 9, "disk"),
        (.workingFileReplaced(path: "a.iso.part", destination: "a.iso", replaced: true), 9, "disk"),
        (.journal(journalError), 9, "disk"),
        (.checkpointFailed(journalError), 9, "disk"),
        (.cancelled, 130, "interrupted"),
    ]

    @Test func everyHaulErrorClassMapsToItsCode() {
        for (error, code, className) in Self.representatives {
            let status = ExitStatus(error)
            #expect(status.code == code, "\(error)")
            #expect(status.className == className, "\(error)")
            #expect(ExitStatus(classifying: error) == status)
        }
    }

    @Test func theTableIsExactlyTheDocumentedCodes() {
        #expect(ExitStatus.table.map(\.code) == [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 63, 130])
        #expect(ExitStatus.table.map(\.class) == [
            "success", "unexpected", "usage", "network", "tls", "http", "protocol", "changed", "checksum", "disk", "too-large",
            "interrupted",
        ])
        #expect(Set(ExitStatus.table.map(\.class)).count == ExitStatus.table.count)
        #expect(ExitStatus.table.allSatisfy { !$0.meaning.isEmpty })
        #expect(ExitStatus.interrupted.meaning.contains("resume"))
    }

    @Test func tableTextAlignsOneStatusPerRowAndIndentsContinuations() {
        let lines = ExitStatus.tableText.split(separator: "\n")
        let rows = lines.filter { $0.dropFirst(2).prefix(3).contains { $0.isNumber } }
        #expect(rows.count == ExitStatus.allCases.count)
        #expect(rows[3].hasPrefix("    3  network      network: DNS"))
        #expect(rows[10].hasPrefix("   63  too-large    the file is larger than --max-filesize"))
        #expect(rows[11].hasPrefix("  130  interrupted  interrupted"))
        #expect(lines.allSatisfy { $0.count <= 72 }, "fits 80 columns, and the man page's indent: \(lines.filter { $0.count > 72 })")
        for line in lines where !rows.contains(line) {
            #expect(line.hasPrefix(String(repeating: " ", count: 20)) && line.dropFirst(20).first != " ",
                    "continues at the meaning column: \(line)")
        }
        // Every meaning is there in full, whatever the width.
        for width in [40, 60, 78, 200] {
            let text = ExitStatus.tableText(width: width)
            let joined = text.split(separator: "\n").map { $0.dropFirst(20) }.joined(separator: " ")
            for status in ExitStatus.allCases { #expect(joined.contains(status.meaning), "\(width): \(status)") }
            if width >= 60 { #expect(text.split(separator: "\n").allSatisfy { $0.count <= width }, "\(width)") }
        }
        #expect(ExitStatus.tableText(width: 200).split(separator: "\n").count == ExitStatus.allCases.count)
    }

    /// ASCII text is wrapped by bytes (the table is built at every start); the lines must be those that
    /// wrapping by Characters gives, over the table's meanings and generated text of words and runs of spaces.
    @Test func asciiWrappingByBytesMatchesWrappingByCharacters() {
        let seed: UInt64 = 0x5752_4150
        print("ExitStatusTests seed \(seed)")
        var random = SplitMixGenerator(seed: seed)
        let pieces = ["a", "bc", "--max-filesize", "  ", " ", "x.part,", "(e.g.", "HTTP", "4xx/5xx", "resume"]
        var texts = ExitStatus.allCases.map(\.meaning)
        for _ in 0..<2_000 {
            texts.append((0..<Int(random.next() % 24)).map { _ in pieces[Int(random.next() % UInt64(pieces.count))] }.joined())
        }
        for text in texts {
            for columns in [1, 5, 20, 33, 52, 72] {
                #expect(ExitStatus.wrapped(text, columns: columns) == ExitStatus.wrappedCharacters(text, columns: columns),
                        "\(columns): \(text)")
            }
        }
        // Text that is not ASCII keeps the Character rule: an accent is one column.
        #expect(ExitStatus.wrapped("caf\u{E9} cr\u{E8}me", columns: 9) == ["caf\u{E9}", "cr\u{E8}me"])
        #expect(ExitStatus.wrapped("caf\u{E9} b", columns: 6) == ["caf\u{E9} b"])
    }

    @Test func commandLineErrorsAreUsageAndOthersAreClassified() {
        #expect(ExitStatus(classifying: UsageError("-o needs one URL")) == .usage)
        #expect(ExitStatus(classifying: InputFileError(line: 2, reason: .unknownOption("dir"))) == .usage)
        #expect(ExitStatus(classifying: ByteSizeError(text: "x", reason: .notANumber)) == .usage)
        #expect(ExitStatus(classifying: URLParseError(.empty, input: "")) == .usage)
        #expect(ExitStatus(classifying: Self.connection(.connectTimedOut)) == .network)
        #expect(ExitStatus(classifying: Self.connection(.tlsFailure)) == .tls)
        #expect(ExitStatus(classifying: CancellationError()) == .interrupted)
        struct Strange: Error {}
        #expect(ExitStatus(classifying: Strange()) == .unexpected)
    }
}
