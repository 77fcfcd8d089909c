import Foundation
import Testing
import HaulTestSupport
@testable import Haul
@testable import HaulIO  // TLSSetupError has no public initializer

/// What a ``HaulError`` says: one message fit for an embedding program and for a person at a shell — what
/// failed, the URL, the host, the tries — with no program's options in it.
@Suite struct HaulErrorMessageTests {
    static let url = "https://files.example/a.iso"
    static let journalError = JournalError.io(call: "write", errno: .noSpace, path: "/srv/a.iso.haul")
    static func connection(_ kind: ConnectionError.Kind) -> ConnectionError {
        ConnectionError(kind: kind, host: "files.example", port: 443, detail: "Connection refused")
    }

    /// One error of every reason (``index(of:)`` proves that none is missing).
    static let representatives: [HaulError.Reason] = [
        .invalidURL(URLParseError(.missingHost, input: "http://")),
        .invalidRequest(RequestHeadError(.invalidHeaderValue(name: "X"))),
        .network(connection(.connectFailed)),
        .tls(connection(.tlsHandshakeFailed)),
        .tlsSetup(TLSSetupError(reason: "cannot read CA file")),
        .malformedResponse(HTTPParseError(.bareLF, offset: 17), server: "files.example:443"),
        .truncatedTLS(server: "files.example:443", bytesReceived: 5),
        .httpStatus(status: 503, reason: "Service Unavailable", url: url),
        .redirect(RedirectError(.tooMany(limit: 10), at: try! HTTPURL(url))),
        .timedOut(after: .seconds(60), url: url, bytesReceived: 1),
        .incomplete(url: url, expected: 10, received: 5),
        .disk(path: "a.iso.part", SystemError(call: "pwrite", errno: 5)),
        .invalidDestination("a checksum needs a file"),
        .destinationExists(path: "a.iso"),
        .changedOnServer(url: url, detail: "ETag"),
        .wrongContentRange(url: url, requested: "0-9", received: "bytes 5-9/10"),
        .faultyResponse(url: url, detail: "the body ran past the range"),
        .belowSpeedLimit(url: url, limit: LowSpeedLimit(bytesPerSecond: 10, seconds: 3)),
        .retryAfterTooLong(url: url, status: 503, asked: .seconds(999_999_999), limit: .seconds(60)),
        .outputClosed,
        .destinationBusy(path: "a.iso", holder: 42),
        .mirrorMismatch(url: url, detail: "length 10, expected 20"),
        .sizeMismatch(url: url, expected: 20, served: 10),
        .checksumMismatch(path: "a.iso.part", expected: Checksum(algorithm: .sha256, hex: "00"), actual: "11"),
        .digestMismatch(DigestMismatch(.piece(index: 2, range: 2048..<3072, mirrors: [url, "http://mirror.example/a.iso"], why: "it failed again"),
                                       path: "a.iso.part", algorithm: "sha-256", expected: "00", actual: "11")),
        .digestMismatch(DigestMismatch(.representationDigest(url: url), path: "a.iso.part", algorithm: "sha-256", expected: "00", actual: "11")),
        .insufficientSpace(path: "a.iso.part", needed: 10, available: 1),
        .responseTooLarge(url: url, limit: 1024, length: 4096),
        .responseTooLarge(url: url, limit: 1024, length: nil),
        .journal(journalError),
        .partialDownloadMismatch(path: "a.iso.part", detail: "it belongs to another URL"),
        .cancelled,
        .checkpointFailed(journalError),
        .unexpected("a bug"),
        .clientShutDown,
        .workingFileReplaced(path: "a.iso.part", destination: "a.iso", replaced: true),
    ]

    /// Each reason's place; the switch is exhaustive, so a new reason must be added here, and then to
    /// ``representatives`` for ``everyReasonHasARepresentative()`` to pass.
    static func index(of reason: HaulError.Reason) -> Int {
        switch reason {
        case .invalidURL: 0
        case .invalidRequest: 1
        case .network: 2
        case .tls: 3
        case .tlsSetup: 4
        case .malformedResponse: 5
        case .truncatedTLS: 6
        case .httpStatus: 7
        case .redirect: 8
        case .timedOut: 9
        case .incomplete: 10
        case .disk: 11
        case .invalidDestination: 12
        case .destinationExists: 13
        case .changedOnServer: 14
        case .wrongContentRange: 15
        case .faultyResponse: 16
        case .belowSpeedLimit: 17
        case .outputClosed: 18
        case .destinationBusy: 19
        case .mirrorMismatch: 20
        case .checksumMismatch: 21
        case .insufficientSpace: 22
        case .journal: 23
        case .partialDownloadMismatch: 24
        case .cancelled: 25
        case .checkpointFailed: 26
        case .unexpected: 27
        case .responseTooLarge: 28
        case .retryAfterTooLong: 29
        case .digestMismatch: 30
        case .sizeMismatch: 31
        case .clientShutDown: 32
        case .workingFileReplaced: 33
        }
    }

    @Test func everyReasonHasARepresentative() {
        #expect(Set(Self.representatives.map(Self.index(of:))) == Set(0...33))
    }

    /// Advice that names a program's options: a long option, or the old "pass replace" wording.
    static func cliAdvice(in text: String) -> String? {
        if let range = text.range(of: #"(^|[\s(])--?[a-zA-Z]"#, options: .regularExpression) { return String(text[range]) }
        for phrase in ["pass ", "replacesExisting", "use -"] where text.contains(phrase) { return phrase }
        return nil
    }

    @Test func noMessageGivesAProgramsAdvice() {
        for reason in Self.representatives {
            let error = HaulError(reason, url: Self.url, attempts: 3)
            #expect(Self.cliAdvice(in: error.description) == nil, "\(error)")
            #expect(Self.cliAdvice(in: reason.description) == nil, "\(reason)")
        }
    }

    @Test func aFailureOfTheServerOrNetworkNamesTheURLAndTheTries() {
        for reason in Self.representatives where reason.concernsServer {
            let error = HaulError(reason, url: Self.url, attempts: 3)
            #expect(error.description.contains(Self.url), "\(error)")
            #expect(error.description.hasSuffix(" (after 3 tries)"), "\(error)")
            #expect(error.description.contains(reason.description), "the reason's own words stay: \(error)")
        }
    }

    @Test func theURLIsNamedOnceAndALocalFailureNamesItsPathInstead() {
        let status = HaulError(.httpStatus(status: 404, reason: "Not Found", url: Self.url), url: Self.url)
        #expect(status.description == "HTTP 404 Not Found from \(Self.url)")
        let refused = HaulError(.network(Self.connection(.connectFailed)), url: Self.url, attempts: 5)
        #expect(refused.description
            == "\(Self.url): connect to files.example:443: Connection refused (after 5 tries)")
        let disk = HaulError(.disk(path: "a.iso.part", SystemError(call: "pwrite", errno: 28)), url: Self.url)
        #expect(disk.description == "a.iso.part: pwrite: No space left on device (errno 28)")
        #expect(HaulError.destinationExists(path: "a.iso").description == "a.iso already exists")
        #expect(HaulError.cancelled.description == "cancelled")
        let announced = HaulError(.responseTooLarge(url: Self.url, limit: 1024, length: 4096), url: Self.url)
        #expect(announced.description == "\(Self.url) is 4096 bytes, more than the limit of 1024 bytes")
        let unannounced = HaulError(.responseTooLarge(url: Self.url, limit: 1024, length: nil), url: Self.url)
        #expect(unannounced.description
            == "\(Self.url) sent more than the limit of 1024 bytes (it announced no length)")
        #expect(!announced.isTransient && !unannounced.isTransient, "the resource will not shrink on a retry")
    }

    @Test func oneTryIsNotCountedAndNoURLIsNotInvented() {
        let once = HaulError(.network(Self.connection(.connectFailed)), url: Self.url)
        #expect(!once.description.contains("tries"))
        #expect(!once.description.contains("try"))
        let unknown = HaulError.network(Self.connection(.connectFailed))
        #expect(unknown.url == nil && unknown.attempts == 1)
        #expect(unknown.description == "connect to files.example:443: Connection refused")
    }

    @Test func theNearestContextWins() {
        let failed = HaulError.httpStatus(status: 503, reason: "", url: "https://cdn.example/a.iso")
            .adding(url: "https://cdn.example/a.iso", attempts: 4)
        let published = failed.adding(url: Self.url)
        #expect(published.url == "https://cdn.example/a.iso", "the redirect target that failed, not the given URL")
        #expect(published.attempts == 4)
        let local = HaulError.destinationExists(path: "a.iso").adding(url: Self.url)
        #expect(local.url == Self.url && local.attempts == 1)
    }

    @Test func theFactoriesMakeTheirReasons() {
        guard case .network(let error) = HaulError.network(Self.connection(.idleTimedOut)).reason else {
            Issue.record("network"); return
        }
        #expect(error.kind == .idleTimedOut)
        guard case .cancelled = HaulError.cancelled.reason else { Issue.record("cancelled"); return }
        // Two reasons share their name and payload with HTTPClientError's cases: each factory still makes its own.
        guard case .tlsSetup = HaulError.tlsSetup(TLSSetupError(reason: "no CA file")).reason else { Issue.record("tlsSetup"); return }
        guard case .invalidRequest = HaulError.invalidRequest(RequestHeadError(.invalidHeaderValue(name: "X"))).reason else {
            Issue.record("invalidRequest"); return
        }
        #expect(HaulError.httpStatus(status: 503, reason: "", url: "u").isTransient)
        #expect(!HaulError.httpStatus(status: 404, reason: "", url: "u").isTransient)
    }

    /// An app matches a reason with `==`: each reason equals itself (and an equal copy) and no other, and a
    /// difference in any detail makes two reasons differ.
    @Test func reasonsCompareByCaseAndDetails() {
        for (index, reason) in Self.representatives.enumerated() {
            for (other, otherReason) in Self.representatives.enumerated() {
                #expect((reason == otherReason) == (index == other), "\(reason) vs \(otherReason)")
            }
        }
        #expect(HaulError.Reason.network(Self.connection(.connectFailed)) == .network(Self.connection(.connectFailed)))
        #expect(HaulError.Reason.network(Self.connection(.connectFailed)) != .network(Self.connection(.idleTimedOut)))
        #expect(HaulError.Reason.httpStatus(status: 404, reason: "", url: "a") != .httpStatus(status: 404, reason: "", url: "b"))
        #expect(HaulError.Reason.redirect(RedirectError(.tooMany(limit: 10), at: try! HTTPURL(Self.url)))
            != .redirect(RedirectError(.tooMany(limit: 11), at: try! HTTPURL(Self.url))))
    }

    @Test func httpStatusIsTheStatusOfAnHTTPReasonOnly() {
        for reason in Self.representatives {
            let error = HaulError(reason, url: Self.url)
            switch reason {
            case .httpStatus(let status, _, _), .retryAfterTooLong(_, let status, _, _): #expect(error.httpStatus == status)
            default: #expect(error.httpStatus == nil, "\(reason)")
            }
        }
        #expect(HaulError.httpStatus(status: 404, reason: "Not Found", url: Self.url).httpStatus == 404)
    }

    @Test func isCancelledIsTrueForACancellationOnly() {
        for reason in Self.representatives {
            let isCancellation = if case .cancelled = reason { true } else { false }
            #expect(HaulError(reason).isCancelled == isCancellation, "\(reason)")
        }
    }

    /// Foundation's `localizedDescription` (what a Foundation program logs) is the same message, not
    /// Foundation's generic "The operation could not be completed".
    @Test func theLocalizedDescriptionIsTheDescription() {
        for reason in Self.representatives {
            let error: any Error = HaulError(reason, url: Self.url, attempts: 2)
            #expect(error.localizedDescription == String(describing: error))
        }
    }
}

/// The context reaches the caller end to end: a download that fails after its retries says which URL and
/// how many tries.
@Suite(.serialized) struct HaulErrorContextTests {
    let resource = MisbehavingServer.Resource.pattern(size: 64 << 10, seed: 17)

    func options(tries: Int) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 1)
        options.retry = RetryPolicy(triesPerRange: tries, totalRetries: 20, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        return options
    }

    func failure(of request: DownloadRequest, options: DownloadOptions) async throws -> HaulError? {
        let task = try HaulClient(options: options).start(request)
        switch await outcomeWithin(.seconds(60), of: task) {
        case .failure(let error)?: return error
        case .success?: Issue.record("the download succeeded"); return nil
        case nil: Issue.record("the download did not end"); return nil
        }
    }

    @Test func aRetriedFailureReportsTheURLAndTheTries() async throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.status(503, retryAfter: "0")))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = server.url("/f")
        guard let error = try await failure(of: DownloadRequest(url: url, destination: .file(directory + "/f")),
                                            options: options(tries: 3)) else { return }
        guard case .httpStatus(503, _, _) = error.reason else { Issue.record("expected HTTP 503, got \(error)"); return }
        #expect(error.url == url)
        #expect(error.attempts == 3)
        #expect(server.requests.count == 3, "the tries the error counts are the requests the server saw")
        #expect(error.description.contains(url) && error.description.hasSuffix("(after 3 tries)"), "\(error)")
        #expect((error as any Error).localizedDescription == error.description)
    }

    @Test func aConnectionFailureNamesTheURLTheHostAndTheTries() async throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.closeWithoutResponse))
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let url = server.url("/f")
        guard let error = try await failure(of: DownloadRequest(url: url, destination: .file(directory + "/f")),
                                            options: options(tries: 2)) else { return }
        #expect(error.isTransient, "\(error)")
        #expect(error.url == url)
        #expect(error.attempts == 2)
        #expect(error.description.hasPrefix(url + ": "), "\(error)")
        #expect(error.description.contains("127.0.0.1:"), "the host and port: \(error)")
        #expect(error.description.hasSuffix("(after 2 tries)"), "\(error)")
    }

    @Test func aRedirectTargetThatFailsIsTheURLReported() async throws {
        let target = try MisbehavingServer(resource: resource, script: .always(.status(500)))
        defer { target.stop() }
        let origin = try MisbehavingServer(resource: resource, script: .always(.redirect(to: target.url("/file"))))
        defer { origin.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        guard let error = try await failure(of: DownloadRequest(url: origin.url("/f"), destination: .file(directory + "/f")),
                                            options: options(tries: 2)) else { return }
        guard case .httpStatus(500, _, _) = error.reason else { Issue.record("expected HTTP 500, got \(error)"); return }
        #expect(error.url == target.url("/file"), "\(error)")
        #expect(error.attempts >= 2, "\(error)")
    }

    @Test func aLocalFailureCarriesTheDownloadsURL() async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        #expect(FileManager.default.createFile(atPath: path, contents: Data([1])))
        let url = server.url("/f")
        guard let error = try await failure(of: DownloadRequest(url: url, destination: .file(path)),
                                            options: options(tries: 2)) else { return }
        guard case .destinationExists = error.reason else { Issue.record("expected destinationExists, got \(error)"); return }
        #expect(error.url == url)
        #expect(error.attempts == 1)
        #expect(error.description == "\(path) already exists")
    }

    /// The URL an error carries is printed, logged and stored in session events: credentials given in it
    /// never appear there, whichever context supplied it (a failure before any request, or a failed request).
    @Test func theURLAnErrorCarriesHasNoCredentials() async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let path = directory + "/f"
        #expect(FileManager.default.createFile(atPath: path, contents: Data([1])))
        let withCredentials = server.url("/f").replacingOccurrences(of: "://", with: "://alice:s3cret@")
        guard let local = try await failure(of: DownloadRequest(url: withCredentials, destination: .file(path)),
                                            options: options(tries: 2)) else { return }
        guard case .destinationExists = local.reason else { Issue.record("expected destinationExists, got \(local)"); return }
        #expect(local.url == server.url("/f").replacingOccurrences(of: "://", with: "://***@"), "\(String(describing: local.url))")

        server.setScript(.always(.status(500)))
        guard let remote = try await failure(of: DownloadRequest(url: withCredentials, destination: .file(directory + "/g")),
                                             options: options(tries: 2)) else { return }
        #expect(remote.url != nil && !remote.url!.contains("s3cret"), "\(String(describing: remote.url))")
        #expect(!remote.description.contains("s3cret"), "\(remote)")
    }
}
