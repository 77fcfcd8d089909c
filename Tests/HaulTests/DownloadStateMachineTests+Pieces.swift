import Testing
import HaulHTTP
@testable import HaulIO
import HaulJournal
@testable import Haul

/// Piece hashes in the machine: pieces are hashed as they complete, a bad one is fetched again and the
/// mirror that served it dropped (named in a notice), the only mirror lying ends the download naming the
/// piece, and the finish and the journal wait for verified pieces.
@Suite struct DownloadStateMachinePieceTests {
    typealias Machine = DownloadStateMachine
    typealias Action = DownloadStateMachine.Action
    let script = DownloadStateMachineTests()
    static let mib: Int64 = 1 << 20
    static let good = String(repeating: "0", count: 32)
    static let bad = String(repeating: "f", count: 32)

    /// 8 MiB in pieces of 1 MiB (every expected md5 is ``good``), from `http://a.test/f` and `mirrors`.
    func machine(mirrors: [String] = [], connections: Int = 2, resume: JournalState? = nil) throws -> Machine {
        let urls = try (["http://a.test/f"] + mirrors).map { try HTTPURL($0) }
        let options = DownloadOptions(connections: connections, retry: RetryPolicy())
        let hashes = try PieceHashes(length: Self.mib, algorithm: .md5, digests: Array(repeating: Self.good, count: 8))
        return Machine(options: options, mirrors: MirrorSet(urls: urls, headers: HTTPFields(), userAgent: "test"),
                       destination: "/d/f", awaitingName: false, sink: .file, sizeLimit: nil, resume: resume, pieceHashes: hashes)
    }

    func checks(_ actions: [Action]) -> [PieceCheck] {
        actions.flatMap { action -> [PieceCheck] in if case .hashPieces(let checks) = action { checks } else { [] } }
    }

    func hashed(_ machine: inout Machine, _ check: PieceCheck, as digest: String) -> [Action] {
        machine.pieceHashed(PieceHashResult(check: check, outcome: .success(digest)))
    }

    /// Running with connection 0 on `http://a.test/f` and connection 1 on the mirror, both with a request out.
    func runningWithMirror() throws -> Machine {
        var machine = try machine(mirrors: ["http://m.test/f"])
        _ = script.started(&machine)
        _ = script.arrive(&machine, try script.partial(0, 4 * Self.mib - 1, of: 8 * Self.mib))
        _ = machine.slotsGranted(1, wanted: 1, for: .mirrorChecks([1]))
        _ = try script.end(&machine)
        _ = script.arrive(&machine, try script.partial(0, 0, of: 8 * Self.mib), on: 1)
        let started = try script.end(&machine, on: 1)
        #expect(script.sends(started).count == 2)
        return machine
    }

    /// Connection `id`'s request arrives and its whole body is written.
    func deliver(_ machine: inout Machine, on id: Int) throws -> (range: Range<Int64>, actions: [Action]) {
        let assignment = try #require(machine.connections[id].exchange)
        let end = try #require(assignment.end)
        _ = script.arrive(&machine, try script.partial(assignment.first, end - 1, of: 8 * Self.mib), on: id)
        return (assignment.first..<end, machine.bodyWritten(end - assignment.first, on: id))
    }

    @Test func aPieceIsHashedOnceItsBytesAreWrittenAndCountsOnlyWhenItMatches() throws {
        var machine = try runningWithMirror()
        let (range, actions) = try deliver(&machine, on: 1)
        let due = checks(actions)
        #expect(due.map(\.range) == stride(from: range.lowerBound, to: range.upperBound, by: Int(Self.mib)).map { $0..<($0 + Self.mib) })
        #expect(due.allSatisfy { $0.expected == Self.good && $0.algorithm == .md5 })
        #expect(machine.journalPieces?.verified.count == 0)
        _ = hashed(&machine, due[0], as: Self.good)
        #expect(machine.journalPieces == JournalPieces(length: Self.mib, verified: ByteRangeSet([due[0].range])))
    }

    @Test func aMirrorServingWrongBytesIsDroppedNamedAndItsPieceFetchedAgain() throws {
        var machine = try runningWithMirror()
        let (_, actions) = try deliver(&machine, on: 1)
        let bad = try #require(checks(actions).first)
        let before = machine.bytesDone
        let after = hashed(&machine, bad, as: Self.bad)
        #expect(machine.mirrors[1].dropped && !machine.mirrors[0].dropped)
        #expect(machine.notices.contains { $0.contains("piece \(bad.piece)") && $0.contains("dropping http://m.test/f") })
        #expect(machine.bytesDone == before - Self.mib)
        #expect(machine.planner?.written.contains(bad.range) == false)
        // Connection 1 still has its request out on the dropped mirror: stopped, and moved to the other.
        #expect(script.has(after) { if case .stop(connection: 1) = $0 { true } else { false } })
        #expect(machine.connections[1].mirror == 0)
        #expect(script.report(after) == nil)
    }

    @Test func wrongBytesOnTheShortLastPieceAreFetchedAgain() throws {
        // 7.5 MiB: the last piece is half a MiB.
        var machine = try machine(connections: 1)
        _ = script.started(&machine)
        let total = 15 * Self.mib / 2
        guard case .answer = script.arrive(&machine, try script.partial(0, total - 1, of: total)) else { Issue.record("probe"); return }
        let due = checks(machine.bodyWritten(total, on: 0))
        #expect(due.count == 8 && due.last?.range == 7 * Self.mib..<total)
        for check in due.dropLast() { _ = hashed(&machine, check, as: Self.good) }
        let ended = try script.end(&machine)
        #expect(!script.has(ended) { if case .checkOutput = $0 { true } else { false } }, "the file is not done while a piece is unverified")
        let again = hashed(&machine, try #require(due.last), as: Self.bad)
        #expect(machine.notices.last == "piece 7 (bytes 7340032-7864319) failed its md5 check: fetching it again")
        let refetch = try #require(script.sends(again).first)
        #expect(refetch.first == 7 * Self.mib && refetch.end == total)
    }

    @Test func theOnlyMirrorServingWrongBytesEndsTheDownloadNamingThePiece() throws {
        var machine = try machine(connections: 1)
        _ = script.started(&machine)
        _ = script.arrive(&machine, try script.partial(0, 8 * Self.mib - 1, of: 8 * Self.mib))
        let first = try #require(checks(machine.bodyWritten(8 * Self.mib, on: 0)).dropFirst(2).first)
        _ = try script.end(&machine)
        // Once more from the same mirror: a fault on the way may not repeat.
        let again = hashed(&machine, first, as: Self.bad)
        let refetch = try #require(script.sends(again).first)
        #expect(refetch.first == 2 * Self.mib && refetch.end == 3 * Self.mib)
        _ = script.arrive(&machine, try script.partial(2 * Self.mib, 3 * Self.mib - 1, of: 8 * Self.mib))
        let second = try #require(checks(machine.bodyWritten(Self.mib, on: 0)).first)
        #expect(second.piece == 2)
        let ended = hashed(&machine, second, as: Self.bad)
        guard case (.failed(let error), _)? = script.report(ended), case .digestMismatch(let mismatch) = error.reason,
              case .piece(let index, let range, let mirrors, let why) = mismatch.subject else {
            Issue.record("expected a piece mismatch, got \(ended)"); return
        }
        #expect(index == 2 && range == 2 * Self.mib..<3 * Self.mib && mirrors == ["http://a.test/f"])
        #expect(why.contains("no other mirror is left"))
        #expect(error.description.contains("piece 2 (bytes 2097152-3145727) of /d/f.part failed its md5 check"))
    }

    @Test func aPieceServedByTwoMirrorsBlamesBoth() throws {
        var machine = try machine(mirrors: ["http://m.test/f", "http://n.test/f"], connections: 2)
        _ = script.started(&machine)
        _ = script.arrive(&machine, try script.partial(0, 4 * Self.mib - 1, of: 8 * Self.mib))
        _ = machine.slotsGranted(2, wanted: 2, for: .mirrorChecks([1, 2]))
        _ = try script.end(&machine)
        for id in [1, 2] {
            _ = script.arrive(&machine, try script.partial(0, 0, of: 8 * Self.mib), on: id)
            _ = try script.end(&machine, on: id)
        }
        // Piece 0 written half by mirror 1's connection, half by mirror 2's (as two segments would).
        let byMirror = machine.connections.filter(\.isBusy).map(\.mirror)
        #expect(byMirror.count >= 2)
        _ = machine.pieceLedger()
        machine.integrity.ledger?.note(0..<Self.mib / 2, from: 1)
        machine.integrity.ledger?.note(Self.mib / 2..<Self.mib, from: 2)
        let check = PieceCheck(piece: 0, range: 0..<Self.mib, algorithm: .md5, expected: Self.good, epoch: machine.integrity.ledger?.epoch ?? -1)
        machine.integrity.ledger?.hashing.insert(0)
        _ = hashed(&machine, check, as: Self.bad)
        #expect(machine.mirrors[1].dropped && machine.mirrors[2].dropped && !machine.mirrors[0].dropped)
        #expect(machine.notices.contains { $0.contains("dropping http://m.test/f and http://n.test/f") && $0.contains("each served bytes of it") })
    }

    @Test func aResumeHashesCompletePiecesTheJournalDoesNotRecordAsVerified() throws {
        let state = JournalState(url: "http://a.test/f", etag: Array("\"v1\"".utf8), totalLength: 8 * Self.mib, minimumSegmentSize: 1,
                                 createdAt: 1, durable: ByteRangeSet([0..<(3 * Self.mib + 100)]),
                                 pieces: JournalPieces(length: Self.mib, verified: ByteRangeSet([0..<Self.mib])))
        var resumed = try machine(resume: state)
        let actions = script.started(&resumed)
        // Piece 0 is trusted; 1 and 2 are complete but unverified: hashed before they count. Piece 3 is kept, to be finished.
        #expect(checks(actions).map(\.piece) == [1, 2])
        #expect(resumed.journalPieces?.verified == ByteRangeSet([0..<Self.mib]))
        #expect(resumed.planner?.written == ByteRangeSet([0..<(3 * Self.mib + 100)]))

        // A journal of an older Haul (no pieces) trusts none.
        var older = state
        older.pieces = nil
        var fromOlder = try machine(resume: older)
        #expect(checks(script.started(&fromOlder)).map(\.piece) == [0, 1, 2])
    }

    @Test func aLengthThePieceHashesDoNotCoverIsRefused() throws {
        var fresh = try machine()
        #expect(fresh.pieceGeometryFailure(9 * Self.mib) != nil)
        #expect(fresh.pieceGeometryFailure(8 * Self.mib) == nil)
        #expect(fresh.pieceGeometryFailure(7 * Self.mib + 1) == nil)
        // A response whose answer would prepare a file of that length is refused before a byte is written.
        let head = try script.head(["HTTP/1.1 200 OK", "Content-Length: 0"])
        guard case .refuse = fresh.settle(.answer(.drain, prepare: fresh.preparation(9 * Self.mib)), head: head, on: 0) else {
            Issue.record("a preparation the piece hashes do not fit was not refused")
            return
        }
        guard case .answer = fresh.settle(.answer(.drain, prepare: fresh.preparation(8 * Self.mib)), head: head, on: 0) else {
            Issue.record("a preparation the piece hashes fit was refused")
            return
        }
    }
}
