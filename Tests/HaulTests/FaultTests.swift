import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// Downloads against the scripted misbehaving server: every fault must end in a byte-identical file or a
/// clear error, never in mixed or silently truncated bytes.
@Suite(.serialized) struct FaultTests {
    static let size = 4 << 20
    let resource = MisbehavingServer.Resource.pattern(size: FaultTests.size, seed: 3)

    func options(connections: Int = 4, path: BodyPath = .spliced) -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: connections, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 3, totalRetries: 20, baseDelay: .milliseconds(20), maxDelay: .milliseconds(200))
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: .seconds(5))
        return path.applied(to: options)
    }

    func download(_ url: String, mirrors: [String] = [], options: DownloadOptions, ifChangedOnServer: ChangePolicy = .fail,
                  log: CapturingLogHandler.Store? = nil) async throws -> (DownloadResult, [UInt8]) {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let request = DownloadRequest(url: url, mirrors: mirrors, destination: .file(directory + "/f"), ifChangedOnServer: ifChangedOnServer)
        let client = try log.map { try HaulClient(options: options, logger: CapturingLogHandler.logger($0)) } ?? HaulClient(options: options)
        let result = try await client.download(request)
        return (result, Array(try Data(contentsOf: URL(fileURLWithPath: directory + "/f"))))
    }

    // MARK: Transport (issue: one-connection downloads and timeouts)

    @Test func stallBeforeTheHeadTimesOut() async throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.stallBeforeHead(.untilStopped)))
        defer { server.stop() }
        var options = options(connections: 1)
        options.retry = .none
        options.timeouts.idle = .milliseconds(300)
        await #expect {
            _ = try await download(server.url("/f"), options: options)
        } throws: { error in
            guard case .network(let connectionError)? = (error as? HaulError)?.reason else { return false }
            return connectionError.kind == .idleTimedOut && String(describing: error).contains("stalled")
        }
    }

    @Test(arguments: BodyPath.allCases)
    func stallMidBodyTimesOutAndARetryFinishes(path: BodyPath) async throws {
        let server = try MisbehavingServer(resource: resource, script: .sequence([.stallMidBody(afterBytes: 100_000, .untilStopped)]))
        defer { server.stop() }
        var options = options(connections: 1, path: path)
        options.timeouts.idle = .milliseconds(300)
        let log = CapturingLogHandler.Store()
        let (result, bytes) = try await download(server.url("/f"), options: options, log: log)
        path.expectTaken(in: log)
        #expect(sameBytes(bytes, resource.bytes))
        #expect(result.retries == 1)
    }

    @Test func totalTimeoutStopsADrippingServer() async throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.drip(bytes: 1000, everyMilliseconds: 20)))
        defer { server.stop() }
        var options = options(connections: 1)
        options.totalTimeout = .milliseconds(500)
        await #expect {
            _ = try await download(server.url("/f"), options: options)
        } throws: { error in
            guard case .timedOut? = (error as? HaulError)?.reason else { return false }
            return true
        }
        // Stopped by the total timeout, not by the end of the file: the drip would take many seconds more.
        #expect(server.bodyBytesSent < FaultTests.size, "the download was stopped before the server had sent the file")
    }

    @Test func tlsWithoutCloseNotifyAfterACompleteBodyIsFine() async throws {
        let ca = try TestCertificateAuthority.shared()
        let server = try MisbehavingServer(resource: resource, script: .always(.closeWithoutCloseNotify), tlsCertificate: ca.server)
        defer { server.stop() }
        var options = options(connections: 1)
        options.tls.caFile = ca.caCertificatePath
        let (_, bytes) = try await download(server.url("/f"), options: options)
        #expect(sameBytes(bytes, resource.bytes))
    }

    @Test func oversizedAndGarbageHeadsAreClearErrors() async throws {
        for (behavior, expected) in [(MisbehavingServer.Behavior.oversizedHead(), "response head larger than 65536 bytes"),
                                     (.garbageHead, "invalid status line")] {
            let server = try MisbehavingServer(resource: resource, script: .always(behavior))
            defer { server.stop() }
            await #expect {
                _ = try await download(server.url("/f"), options: options())
            } throws: { error in
                guard case .malformedResponse? = (error as? HaulError)?.reason else { return false }
                return String(describing: error).contains(expected) && String(describing: error).contains("127.0.0.1:\(server.port)")
            }
        }
    }

    @Test(arguments: BodyPath.allCases)
    func truncatedChunkedBodyIsRetried(path: BodyPath) async throws {
        // Request 0 is the probe: a chunked 206 has no length to hold it to, so the engine drops its body and
        // asks again for a bounded range (request 1), which is the one cut short here.
        let server = try MisbehavingServer(resource: resource, script: .sequence([.chunked, .truncatedChunked(afterBytes: 50_000)], then: .chunked))
        defer { server.stop() }
        let log = CapturingLogHandler.Store()
        let (result, bytes) = try await download(server.url("/f"), options: options(connections: 1, path: path), log: log)
        path.expectTaken(in: log, spliceExpected: false)
        #expect(log.with(BodyPath.splicingMessage).isEmpty, "a chunked body is never spliced")
        #expect(sameBytes(bytes, resource.bytes))
        #expect(result.retries == 1)
    }

    // MARK: Segmented engine

    @Test(arguments: BodyPath.allCases)
    func serverIgnoringRangeIsOneStream(path: BodyPath) async throws {
        let server = try MisbehavingServer(resource: resource, script: .always(.ignoreRange))
        defer { server.stop() }
        let log = CapturingLogHandler.Store()
        let (result, bytes) = try await download(server.url("/f"), options: options(connections: 8, path: path), log: log)
        path.expectTaken(in: log)
        #expect(sameBytes(bytes, resource.bytes))
        #expect(result.connections == 1)
        #expect(server.requests.count == 1)
    }

    @Test func changedETagFailsClearlyOrRestartsCleanly() async throws {
        let changed = MisbehavingServer.Resource.pattern(size: FaultTests.size, seed: 99)
        let server = try MisbehavingServer(resource: resource, script: .changeResource(to: changed, fromRequest: 2))
        defer { server.stop() }
        await #expect {
            _ = try await download(server.url("/f"), options: options())
        } throws: { error in
            guard case .changedOnServer? = (error as? HaulError)?.reason else { return false }
            return String(describing: error).contains("changed on the server")
        }

        let again = try MisbehavingServer(resource: resource, script: .changeResource(to: changed, fromRequest: 2))
        defer { again.stop() }
        let (_, bytes) = try await download(again.url("/f"), options: options(), ifChangedOnServer: .restart)
        #expect(sameBytes(bytes, changed.bytes), "after a restart the file is the new version, never a mix")
    }

    @Test(arguments: BodyPath.allCases)
    func wrongOrMissingContentRangeIsRejected(path: BodyPath) async throws {
        for behavior in [MisbehavingServer.Behavior.wrongContentRange(shiftedBy: 10), .omitContentRange] {
            // The probe (request 0) is answered correctly; every ranged request after it is not.
            let server = try MisbehavingServer(resource: resource, script: MisbehavingServer.Script { $0.index >= 1 ? behavior : .normal })
            defer { server.stop() }
            await #expect {
                _ = try await download(server.url("/f"), options: options(path: path))
            } throws: { error in
                guard case .wrongContentRange? = (error as? HaulError)?.reason else { return false }
                return true
            }
        }
    }

    @Test(arguments: BodyPath.allCases)
    func droppedConnectionsRefetchOnlyTheLostBytes(path: BodyPath) async throws {
        let server = try MisbehavingServer(resource: resource, script: .byRequestIndex([
            2: .closeMidBody(afterBytes: 200_000), 3: .closeMidBody(afterBytes: 10_000), 5: .closeMidBody(afterBytes: 300_000),
        ]))
        defer { server.stop() }
        let log = CapturingLogHandler.Store()
        let (result, bytes) = try await download(server.url("/f"), options: options(path: path), log: log)
        path.expectTaken(in: log)
        #expect(sameBytes(bytes, resource.bytes))
        #expect(result.retries == 3)
        // What was lost: the undelivered part of each cut-off ranged request.
        let exchanges = server.exchanges
        var lost = 0
        for exchange in exchanges where exchange.request.index != 0 {
            guard let range = exchange.request.range?.resolved(length: FaultTests.size), let delivered = exchange.deliveredRange else { continue }
            if delivered.count < range.count {
                lost += range.count - delivered.count
                // The retry asked exactly for the rest: bytes already written were kept.
                #expect(exchanges.contains { $0.request.range?.resolved(length: FaultTests.size)?.lowerBound == delivered.upperBound })
            }
        }
        #expect(lost > 0)
        #expect(result.bytesRequested == Int64(FaultTests.size + lost), "requested = file + lost bytes, nothing else twice")
    }

    @Test func serviceUnavailableHonoursRetryAfter() async throws {
        let server = try MisbehavingServer(resource: resource, script: .sequence([.status(503, retryAfter: "1")]))
        defer { server.stop() }
        let started = ContinuousClock.now
        let (result, bytes) = try await download(server.url("/f"), options: options())
        #expect(sameBytes(bytes, resource.bytes))
        #expect(result.retries == 1)
        #expect(ContinuousClock.now - started >= .milliseconds(900), "waited for Retry-After")
    }

    @Test func failingMirrorIsDroppedAndTheWorkingOneFinishes() async throws {
        let broken = try MisbehavingServer(resource: resource, script: .always(.closeWithoutResponse))
        let working = try MisbehavingServer(resource: resource)
        defer { broken.stop(); working.stop() }
        let (_, bytes) = try await download(broken.url("/f"), mirrors: [working.url("/f")], options: options())
        #expect(sameBytes(bytes, resource.bytes))
        #expect(broken.requests.count == 3, "tried A three times (triesPerRange), then moved to B")
        #expect(working.requests.count >= 1)
    }

    @Test(arguments: BodyPath.allCases)
    func mirrorThatFailsMidDownloadHandsItsRangesOver(path: BodyPath) async throws {
        let flaky = try MisbehavingServer(resource: resource, script: .byRequestIndex([0: .normal], otherwise: .closeMidBody(afterBytes: 1000)))
        let working = try MisbehavingServer(resource: resource)
        defer { flaky.stop(); working.stop() }
        let log = CapturingLogHandler.Store()
        let (_, bytes) = try await download(flaky.url("/f"), mirrors: [working.url("/f")], options: options(path: path), log: log)
        path.expectTaken(in: log)
        #expect(sameBytes(bytes, resource.bytes))
        #expect(working.requests.count >= 2)
    }

    /// Runs `body` with a 1 MiB tmpfs mounted at a fresh directory.
    func withTinyFilesystem(_ body: (String) async throws -> Void) async throws {
        let mountPoint = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: mountPoint) }
        let mount = Process()
        mount.executableURL = URL(fileURLWithPath: "/bin/mount")
        mount.arguments = ["-t", "tmpfs", "-o", "size=1m", "tmpfs", mountPoint]
        try mount.run()
        mount.waitUntilExit()
        try #require(mount.terminationStatus == 0, "mounting a 1 MiB tmpfs needs root (the test command runs as root in CI)")
        defer {
            let umount = Process()
            umount.executableURL = URL(fileURLWithPath: "/bin/umount")
            // Lazy: the client may still hold the file open for a moment; a plain umount would then fail
            // with "target is busy" and leave the mount (and its directory) behind in /tmp.
            umount.arguments = ["--lazy", mountPoint]
            try? umount.run()
            umount.waitUntilExit()
        }
        try await body(mountPoint)
    }

    @Test func aJournalThatCannotBeWrittenIsReportedAndTheDownloadGoesOn() async throws {
        try await withTinyFilesystem { mountPoint in
            // The data fits (preallocated first); the journal's pages then do not.
            let tight = MisbehavingServer.Resource.pattern(size: (1 << 20) - 8192, seed: 3)
            let server = try MisbehavingServer(resource: tight)
            defer { server.stop() }
            var journaling = options()
            journaling.checkpointBytes = 64 << 10   // well below the file, so that it is journaled at all
            let task = try HaulClient(options: journaling).start(DownloadRequest(url: server.url("/f"), destination: .file(mountPoint + "/f")))
            _ = try await task.value
            #expect(sameBytes(Array(try Data(contentsOf: URL(fileURLWithPath: mountPoint + "/f"))), tight.bytes))
            let failure = try #require(task.currentProgress.checkpointFailure, "the failed checkpoint is reported")
            guard case .io(_, let errno, _) = failure else { Issue.record("expected an I/O error, got \(failure)"); return }
            #expect(errno == .noSpace)
        }
    }

    @Test func outOfSpaceFailsAtOnce() async throws {
        try await withTinyFilesystem { mountPoint in try await outOfSpaceFailsAtOnce(mountPoint) }
    }

    func outOfSpaceFailsAtOnce(_ mountPoint: String) async throws {
        let server = try MisbehavingServer(resource: resource)
        defer { server.stop() }
        // Without a hold, loopback's socket buffers can take the whole 4 MiB before Haul reads the head, and
        // "sent less than the file" would depend on timing; held at 64 KiB, a download that needed the body
        // before failing would wait and fail otherwise.
        server.hold(afterBodyBytes: 64 << 10)
        await #expect {
            _ = try await HaulClient(options: options()).download(server.url("/f"), to: mountPoint + "/f")
        } throws: { error in
            guard case .insufficientSpace(_, let needed, let available)? = (error as? HaulError)?.reason else { return false }
            return needed == Int64(FaultTests.size) && available < needed
        }
        // "At once" is shown by what was fetched, not by a clock: the file was refused before it was downloaded.
        #expect(server.bodyBytesSent < FaultTests.size, "failed before downloading the file")
    }
}
