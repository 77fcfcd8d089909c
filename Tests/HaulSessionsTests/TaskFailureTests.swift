import Haul
import HaulHTTP
import HaulIO
import Testing
@testable import HaulSessions

/// A queued task's failure travels through the log and the protocol as a structured value: the client gets
/// the engine's `HaulError` back, and matches it as it would a direct download's.
@Suite struct TaskFailureTests {
    static let url = "https://example.org/a.iso"

    /// Every reason whose details are plain values, as the engine makes them.
    static let detailedReasons: [HaulError.Reason] = [
        .invalidURL(Result { () throws(URLParseError) in try HTTPURL("ftp://x/") }.failure!),
        .invalidRequest(RequestHeadError(.invalidHeaderName("a b"))),
        .invalidRequest(RequestHeadError(.ifRangeWithoutRange)),
        .network(ConnectionError(kind: .connectFailed, host: "example.org", port: 443, systemError: SystemError(call: "connect", errno: 111))),
        .network(ConnectionError(kind: .idleTimedOut, host: "example.org", port: 80, detail: "30 s")),
        .tls(ConnectionError(kind: .tlsHandshakeFailed, host: "example.org", port: 443, detail: "certificate verify failed")),
        .tlsSetup(TLSSetupError(recordedReason: "cannot read /x/ca.pem")),
        .truncatedTLS(server: "example.org:443", bytesReceived: 12),
        .httpStatus(status: 404, reason: "Not Found", url: url),
        .timedOut(after: .seconds(90), url: url, bytesReceived: 5),
        .incomplete(url: url, expected: 100, received: 50),
        .disk(path: "/data/a.iso", SystemError(call: "pwrite", errno: 28)),
        .invalidDestination("a checksum needs a file"),
        .destinationExists(path: "/data/a.iso"),
        .changedOnServer(url: url, detail: "the ETag changed"),
        .wrongContentRange(url: url, requested: "0-9", received: "bytes 5-9/10"),
        .faultyResponse(url: url, detail: "body longer than its range"),
        .belowSpeedLimit(url: url, limit: LowSpeedLimit(bytesPerSecond: 100, seconds: 60)),
        .retryAfterTooLong(url: url, status: 503, asked: .seconds(3600), limit: .seconds(300)),
        .outputClosed,
        .destinationBusy(path: "/data/a.iso", holder: 42),
        .destinationBusy(path: "/data/a.iso", holder: nil),
        .mirrorMismatch(url: url, detail: "length 10, not 11"),
        .sizeMismatch(url: url, expected: 11, served: 10),
        .checksumMismatch(path: "/data/a.iso", expected: try! Checksum("sha256=" + String(repeating: "ab", count: 32)), actual: "00"),
        .digestMismatch(DigestMismatch(.piece(index: 3, range: 3072..<4096, mirrors: [url, "http://m2.example/a.iso"], why: "no other mirror is left"),
                                       path: "/data/a.iso.part", algorithm: "sha-256", expected: "00", actual: "11")),
        .digestMismatch(DigestMismatch(.piece(index: 0, range: 0..<10, mirrors: [], why: "it failed 4 times"),
                                       path: "/data/a.iso.part", algorithm: "md5", expected: "00", actual: "11")),
        .digestMismatch(DigestMismatch(.representationDigest(url: url), path: "/data/a.iso.part", algorithm: "sha-512", expected: "00", actual: "11")),
        .insufficientSpace(path: "/data/a.iso", needed: 10, available: 5),
        .responseTooLarge(url: url, limit: 100, length: 1000),
        .responseTooLarge(url: url, limit: 100, length: nil),
        .partialDownloadMismatch(path: "/data/a.iso", detail: "another file's journal"),
        .workingFileReplaced(path: "/data/a.iso.part", destination: "/data/a.iso", replaced: true),
        .workingFileReplaced(path: "/data/a.iso.part", destination: "/data/a.iso", replaced: false),
        .cancelled,
        .unexpected("a bug"),
    ]

    static func roundTrip(_ failure: TaskFailure) throws -> TaskFailure {
        let text = FailureCodec.json(failure).serialized
        return try FailureCodec.decode(try JSONParser.parse(Array(text.utf8)), path: "failure")
    }

    @Test func everyDetailedReasonComesBackEqualToTheEngines() throws {
        for reason in Self.detailedReasons {
            let failure = TaskFailure(HaulError(reason, url: Self.url, attempts: 3))
            let back = try Self.roundTrip(failure)
            #expect(back.error.reason == reason, "\(reason)")
            #expect(back == failure, "\(reason)")
            #expect(back.error.url == Self.url && back.error.attempts == 3)
            #expect(back.failureClass == FailureClass(HaulError(reason)))
        }
    }

    @Test func aReasonTheLogDoesNotDetailKeepsItsMessageClassAndName() throws {
        let parseError = HTTPParseError(.bareLF, offset: 7)
        let failure = TaskFailure(HaulError(.malformedResponse(parseError, server: "h:80"), url: Self.url))
        #expect(failure.failureClass == .protocol && failure.exitCode == 6)
        let back = try Self.roundTrip(failure)
        #expect(back.error.reason == .unexpected(failure.message))
        #expect(back.message == failure.message && back.failureClass == .protocol && back.exitCode == 6)
        // Written again, it is the same record.
        #expect(FailureCodec.json(back) == FailureCodec.json(failure))
    }

    @Test func aFailedEventCarriesTheStructuredFailureAndTheOldFields() throws {
        let failure = TaskFailure(HaulError(.httpStatus(status: 404, reason: "Not Found", url: Self.url), url: Self.url))
        let event = SampleLog.event(3, 1, .failed(failure))
        guard case .object(let object) = event.json else { Issue.record("not an object"); return }
        #expect(object["error"] == .string("HTTP 404 Not Found from \(Self.url)"))
        #expect(object["class"] == .string("http") && object["code"] == .int(5))
        #expect(object["failure"] != nil)
        let back = try SessionEvent(json: event.json)
        #expect(back == event)
        guard case .failed(let decoded) = back.kind else { Issue.record("not failed"); return }
        #expect(decoded.httpStatus == 404)
    }

    /// Whatever the daemon writes reads back: a message far longer than a line on a terminal, say.
    @Test func aLongFailureReadsBack() throws {
        let detail = String(repeating: "x", count: 40_000)
        let failure = TaskFailure(HaulError(.changedOnServer(url: Self.url, detail: detail), url: Self.url))
        let event = SampleLog.event(3, 1, .failed(failure))
        let record = LogRecord.event(event, spec: nil, part: nil)
        #expect(try LogRecord(payload: record.payload) == record)
    }

    /// A log written before failures were structured: `error`, `class`, `code` only.
    @Test func anOldFailedEventIsStillRead() throws {
        let line = #"{"seq":3,"time":5,"task":1,"type":"failed","error":"HTTP 404 Not Found from http://h/b","class":"http","code":5}"#
        let event = try SessionEvent(json: try JSONParser.parse(Array(line.utf8)))
        guard case .failed(let failure) = event.kind else { Issue.record("not failed"); return }
        #expect(failure.message == "HTTP 404 Not Found from http://h/b")
        #expect(failure.failureClass == .http && failure.exitCode == 5)
        #expect(failure.error.reason == .unexpected("HTTP 404 Not Found from http://h/b"))
        let info = try TaskInfo(json: try JSONParser.parse(Array(#"{"id":1,"state":"failed","url":"http://h/b","path":null,"bytes":0,"total":null,"error":"gone","class":"http","code":5}"#.utf8)))
        #expect(info.failure?.message == "gone" && info.failure?.exitCode == 5)
    }

    @Test func aSessionErrorMatchesATaskFailureAsADirectDownloadsError() {
        let notFound = HaulError(.httpStatus(status: 404, reason: "Not Found", url: Self.url), url: Self.url)
        let error = SessionError.taskFailed(TaskFailure(notFound))
        #expect(error.httpStatus == 404)
        #expect(error.haulError?.reason == notFound.reason)
        #expect(!error.isCancelled && SessionError.taskCancelled.isCancelled)
        #expect(SessionError.disconnected.httpStatus == nil && SessionError.disconnected.haulError == nil)
        #expect(error.description == notFound.description)
    }

    /// The client folds a task's events as the daemon's state does.
    @Test func theClientsFoldIsTheStates() throws {
        let state = try SessionState.replay(SampleLog.records)
        for task in state.tasks {
            var info = TaskInfo(id: task.id, state: .queued, url: task.spec.url, path: task.spec.filePath, directory: nil, bytes: 0, total: nil)
            for event in state.events where event.task == task.id { info = info.applying(event) }
            #expect(info.state == task.state, "task \(task.id)")
            #expect(info.failure == task.failure)
            if task.state == .completed { #expect(info.bytes == task.bytes && info.digest == task.completion?.digest) }
        }
    }
}

extension Result {
    fileprivate var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
