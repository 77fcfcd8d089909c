import Testing
import HaulHTTP
@testable import HaulIO
import HaulJournal
@testable import Haul

/// URLs that expire mid-download (DownloadStateMachine+Refresh.swift): which failure asks the refresher,
/// and what the new URL's answers may be — each lie of a refreshed URL is a change or a fault, never bytes
/// written.
extension DownloadStateMachineTests {
    static let fresh = try! HTTPURL("http://b.test/f?sig=new")

    /// A 100 MiB download with a refresher whose probe was answered with `validators` (header lines), with
    /// connection 1 running its first range.
    func refreshing(validators: [String] = ["ETag: \"v1\""], ifChanged: ChangePolicy = .fail) throws -> Machine {
        let options = DownloadOptions(connections: 2, lowSpeedLimit: LowSpeedLimit(bytesPerSecond: 100, seconds: 2))
        var machine = Machine(options: options, mirrors: MirrorSet(urls: [try HTTPURL("http://a.test/f")], headers: HTTPFields(), userAgent: "test"),
                              destination: "/d/f", awaitingName: false, sink: .file, sizeLimit: nil, ifChangedOnServer: ifChanged,
                              refreshesURLs: true)
        _ = started(&machine)
        let probe = try head(["HTTP/1.1 206 Partial Content", "Content-Range: bytes 0-\(4 * Self.mib - 1)/\(100 * Self.mib)",
                              "Content-Length: \(4 * Self.mib)"] + validators)
        guard case .answer = arrive(&machine, probe) else { throw HaulError.unexpected("probe not accepted") }
        _ = machine.slotsGranted(1, wanted: 1, for: .work)
        return machine
    }

    /// Connection `id`'s request is answered `status`; the actions its failure leads to.
    func expire(_ machine: inout Machine, on id: Int = 1, status: Int = 403) throws -> [Action] {
        guard case .refuse(let error) = arrive(&machine, try head(["HTTP/1.1 \(status) Nope", "Content-Length: 0"]), on: id) else {
            throw HaulError.unexpected("an error status was not refused")
        }
        return try end(&machine, on: id, failure: error)
    }

    func refreshes(_ actions: [Action]) -> [HTTPURL] {
        actions.compactMap { if case .refreshURL(_, let url, _) = $0 { url } else { nil } }
    }

    /// The machine after connection 1's URL expired and was refreshed to ``fresh``: its range asked again there.
    func refreshed(validators: [String] = ["ETag: \"v1\""], ifChanged: ChangePolicy = .fail) throws -> (Machine, SegmentAssignment) {
        var machine = try refreshing(validators: validators, ifChanged: ifChanged)
        let before = try #require(machine.connections[1].exchange)
        #expect(refreshes(try expire(&machine)) == [try HTTPURL("http://a.test/f")])
        let again = try #require(sends(machine.urlRefreshed(mirror: 0, to: Self.fresh, refresherError: nil)).first)
        #expect(again.url == Self.fresh && again.connection == 1 && again.first == before.first, "the same range, nothing before it again")
        #expect(again.sentIfRange, "the new URL is asked with the download's validator")
        return (machine, again)
    }

    @Test func anExpiredURLIsRefreshedAndTheRangeContinuesThere() throws {
        var (machine, again) = try refreshed()
        let last = try #require(again.end) - 1
        guard case .answer(let answer, _, _) = arrive(&machine, try partial(again.first, last, of: 100 * Self.mib), on: 1) else {
            Issue.record("the same file at the new URL is written"); return
        }
        #expect(answer.window?.start == again.first)
        #expect(machine.mirrors.primary.given == Self.fresh, "later requests and a later re-resolution use the new URL")
    }

    @Test func eachLieOfTheRefreshedURLIsAChangeOrAFaultNeverWritten() throws {
        let total = 100 * Self.mib
        let dated = ["ETag: \"v1\"", "Last-Modified: Wed, 21 Oct 2015 07:28:00 GMT"]
        let lies: [(String, [String], (SegmentAssignment) -> [String], Bool)] = [
            ("another length", ["ETag: \"v1\""], { ["HTTP/1.1 206 Partial Content", "Content-Range: bytes \($0.first)-\($0.end! - 1)/\(total + 1)",
                                                   "Content-Length: \($0.end! - $0.first)", "ETag: \"v1\""] }, true),
            ("a weak ETag", ["ETag: \"v1\""], { ["HTTP/1.1 206 Partial Content", "Content-Range: bytes \($0.first)-\($0.end! - 1)/\(total)",
                                                "Content-Length: \($0.end! - $0.first)", "ETag: W/\"v1\""] }, true),
            ("a changed Last-Modified", dated, { ["HTTP/1.1 206 Partial Content", "Content-Range: bytes \($0.first)-\($0.end! - 1)/\(total)",
                                                  "Content-Length: \($0.end! - $0.first)", "ETag: \"v1\"",
                                                  "Last-Modified: Thu, 22 Oct 2015 08:28:00 GMT"] }, true),
            ("a 200 of another version", ["ETag: \"v1\""], { _ in ["HTTP/1.1 200 OK", "Content-Length: \(total)", "ETag: \"v2\""] }, true),
            ("a 200 of the same file", ["ETag: \"v1\""], { _ in ["HTTP/1.1 200 OK", "Content-Length: \(total)", "ETag: \"v1\""] }, false),
        ]
        for (lie, validators, answer, isChange) in lies {
            var (machine, again) = try refreshed(validators: validators)
            guard case .refuse(let error) = arrive(&machine, try head(answer(again)), on: 1) else {
                Issue.record("\(lie): written"); continue
            }
            if isChange {
                guard case .changedOnServer = error.reason else { Issue.record("\(lie): \(error) is no change"); continue }
            } else {
                guard case .faultyResponse = error.reason else { Issue.record("\(lie): \(error) is not retried as a fault"); continue }
            }
        }
    }

    @Test func aRefreshedURLThatExpiresTooIsRefreshedAgainUpToTheLimit() throws {
        var (machine, _) = try refreshed()
        for round in 2...URLRefreshDecision.maximumRefreshes {
            #expect(refreshes(try expire(&machine)).count == 1, "refresh \(round)")
            _ = machine.urlRefreshed(mirror: 0, to: try HTTPURL("http://b.test/f?sig=\(round)"), refresherError: nil)
        }
        let last = try expire(&machine)
        #expect(refreshes(last).isEmpty)
        guard case (.failed(let error), _)? = report(last), case .httpStatus(403, _, _) = error.reason else {
            Issue.record("after the last refresh the expiry stands"); return
        }
        #expect(machine.snapshot(checkpointFailure: nil).notices.contains { $0.contains("after 5 refreshes") })
    }

    @Test func noURLOrTheSameURLFailsWithTheOriginalError() throws {
        for answer in [nil, try HTTPURL("http://a.test/f")] {
            var machine = try refreshing()
            _ = try expire(&machine)
            let actions = machine.urlRefreshed(mirror: 0, to: answer, refresherError: nil)
            #expect(sends(actions).isEmpty)
            guard case (.failed(let error), _)? = report(actions), case .httpStatus(403, _, _) = error.reason else {
                Issue.record("\(String(describing: answer)): expected the 403"); continue
            }
        }
    }

    @Test func connectionsFailingMeanwhileWaitForTheOneRefresh() throws {
        var machine = try refreshing()
        _ = machine.slotsGranted(1, wanted: 1, for: .work)
        #expect(refreshes(try expire(&machine, on: 1)).count == 1)
        #expect(refreshes(try expire(&machine, on: 2, status: 410)).isEmpty, "joins the refresh asked for")
        let resent = sends(machine.urlRefreshed(mirror: 0, to: Self.fresh, refresherError: nil))
        #expect(Set(resent.map(\.connection)) == [1, 2] && resent.allSatisfy { $0.url == Self.fresh })
    }

    @Test func aFailureBeforeAnythingWasAcceptedIsNoExpiry() throws {
        let options = DownloadOptions(connections: 2)
        var machine = Machine(options: options, mirrors: MirrorSet(urls: [try HTTPURL("http://a.test/f")], headers: HTTPFields(), userAgent: "test"),
                              destination: "/d/f", awaitingName: false, sink: .file, sizeLimit: nil, refreshesURLs: true)
        _ = started(&machine)
        let actions = try expire(&machine, on: 0)
        #expect(refreshes(actions).isEmpty)
        guard case (.failed, _)? = report(actions) else { Issue.record("the probe's 403 fails the download"); return }
    }

    @Test func anIdentityThatCannotProveTheSameFileIsAChangeForThePolicy() throws {
        // A weak ETag alone (no validator at all: aFileWithoutValidatorsIsNeverContinuedFromANewURL).
        for identity in [["ETag: W/\"v1\""]] {
            var failing = try refreshing(validators: identity)
            _ = try expire(&failing)
            let failed = failing.urlRefreshed(mirror: 0, to: Self.fresh, refresherError: nil)
            guard case (.failed(let error), _)? = report(failed), case .changedOnServer = error.reason else {
                Issue.record("\(identity): expected a change"); continue
            }
            var restarting = try refreshing(validators: identity, ifChanged: .restart)
            _ = try expire(&restarting)
            let restarted = restarting.urlRefreshed(mirror: 0, to: Self.fresh, refresherError: nil)
            #expect(has(restarted) { if case .discardJournal(thenStartOver: true) = $0 { true } else { false } }, "\(identity): starts over")
            #expect(restarting.mirrors.primary.given == Self.fresh, "from the new URL")
        }
    }

    @Test func aFileWithoutValidatorsIsNeverContinuedFromANewURL() throws {
        let options = DownloadOptions(connections: 1)
        var machine = Machine(options: options, mirrors: MirrorSet(urls: [try HTTPURL("http://a.test/f")], headers: HTTPFields(), userAgent: "test"),
                              destination: "/d/f", awaitingName: false, sink: .file, sizeLimit: nil, refreshesURLs: true)
        _ = started(&machine)
        guard case .answer(let answer, _, _) = arrive(&machine, try head(["HTTP/1.1 200 OK", "Content-Length: \(4 * Self.mib)"])),
              var window = answer.window else { Issue.record("the whole file is taken"); return }
        _ = window.take(1000)
        _ = machine.bodyWritten(1000, on: 0)
        // Cut short: without ranges the file starts over, and the new probe finds the URL expired.
        let retry = try end(&machine, on: 0, window: window, failure: .incomplete(url: "http://a.test/f", expected: 4 * Self.mib, received: 1000))
        #expect(has(retry) { if case .retry = $0 { true } else { false } })
        _ = machine.retryDue(0)
        #expect(refreshes(try expire(&machine, on: 0)).count == 1, "the download had begun")
        let actions = machine.urlRefreshed(mirror: 0, to: Self.fresh, refresherError: nil)
        guard case (.failed(let error), _)? = report(actions), case .changedOnServer = error.reason else {
            Issue.record("nothing proves the new URL's file the same: a change"); return
        }
    }
}

extension DownloadStateMachineTests {
    @Test func aRequestToTheOldURLThatFailsAfterTheRefreshGoesToTheNewOneWithoutAsking() throws {
        var machine = try refreshing()
        _ = machine.slotsGranted(1, wanted: 1, for: .work)
        #expect(refreshes(try expire(&machine, on: 1)).count == 1)
        _ = machine.urlRefreshed(mirror: 0, to: Self.fresh, refresherError: nil)
        // Connection 2 had asked the old URL before the answer.
        let late = try expire(&machine, on: 2)
        #expect(refreshes(late).isEmpty)
        #expect(sends(late).map(\.url) == [Self.fresh])
    }
}

extension DownloadStateMachineTests {
    @Test func aMirrorWhoseRefreshCannotBeUsedIsLeftOutWhileAnotherServesTheFile() throws {
        let urls = [try HTTPURL("http://a.test/f"), try HTTPURL("http://m.test/f")]
        // No URL, the same URL again, a new URL that a weak ETag cannot prove the same file.
        for (mirrorTag, answer) in [("\"v1\"", nil), ("\"v1\"", urls[1]), ("W/\"v1\"", Self.fresh)] as [(String, HTTPURL?)] {
            let options = DownloadOptions(connections: 2, lowSpeedLimit: LowSpeedLimit(bytesPerSecond: 100, seconds: 2))
            var machine = Machine(options: options, mirrors: MirrorSet(urls: urls, headers: HTTPFields(), userAgent: "test"),
                                  destination: "/d/f", awaitingName: false, sink: .file, sizeLimit: nil, refreshesURLs: true)
            _ = started(&machine)
            _ = arrive(&machine, try partial(0, 4 * Self.mib - 1, of: 100 * Self.mib))
            // The mirror is checked, then connection 1 works on it.
            _ = machine.slotsGranted(1, wanted: 1, for: .mirrorChecks([1]))
            _ = arrive(&machine, try partial(0, 0, of: 100 * Self.mib, etag: mirrorTag), on: 1)
            _ = try end(&machine, on: 1)
            let working = try #require(machine.connections[1].exchange)
            #expect(working.mirror == 1 && working.role == .ranged)
            #expect(refreshes(try expire(&machine)) == [urls[1]])
            let actions = machine.urlRefreshed(mirror: 1, to: answer, refresherError: nil)
            #expect(report(actions) == nil, "\(mirrorTag) \(String(describing: answer)): the download goes on")
            #expect(machine.mirrors[1].dropped && !sends(actions).isEmpty && sends(actions).allSatisfy { $0.mirror == 0 })
        }
    }
}
