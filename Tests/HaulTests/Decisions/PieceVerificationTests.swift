import Testing
import HaulIO
import HaulJournal
@testable import Haul

/// ``PieceVerification``: which pieces are ready to hash, what a resume keeps, and what a bad piece leads to —
/// for every lie a mirror can tell about a piece.
@Suite struct PieceVerificationTests {
    /// 10 pieces of 100 bytes over 950 bytes: the last is 50 bytes.
    static func geometry(total: Int64 = 950, length: Int64 = 100) throws -> PieceVerification.Geometry {
        let count = Int((total - 1) / length + 1)
        let hashes = try PieceHashes(length: length, algorithm: .md5, digests: Array(repeating: String(repeating: "0", count: 32), count: count))
        return try PieceVerification.Geometry(hashes, total: total)
    }

    // MARK: Geometry

    @Test func piecesOverlappingARangeIncludeTheShortLastPiece() throws {
        let geometry = try Self.geometry()
        #expect(geometry.count == 10)
        #expect(geometry.range(of: 9) == 900..<950)
        #expect(geometry.pieces(overlapping: 0..<100) == 0..<1)
        #expect(geometry.pieces(overlapping: 99..<101) == 0..<2)
        #expect(geometry.pieces(overlapping: 920..<5000) == 9..<10)
        #expect(geometry.pieces(overlapping: 950..<960).isEmpty)
        #expect(geometry.pieces(overlapping: 10..<10).isEmpty)
    }

    @Test func hashesThatDoNotCoverTheLengthAreRefused() throws {
        let hashes = try PieceHashes(length: 100, algorithm: .md5, digests: Array(repeating: String(repeating: "a", count: 32), count: 10))
        // 10 pieces of 100 bytes cover 901 to 1000 bytes.
        #expect(throws: PieceHashesError.self) { try PieceVerification.Geometry(hashes, total: 900) }
        #expect(throws: PieceHashesError.self) { try PieceVerification.Geometry(hashes, total: 1001) }
        #expect(throws: PieceHashesError.self) { try PieceVerification.Geometry(hashes, total: 0) }
        #expect(try PieceVerification.Geometry(hashes, total: 901).count == 10)
        #expect(try PieceVerification.Geometry(hashes, total: 1000).range(of: 9) == 900..<1000)
    }

    // MARK: Which pieces to hash

    @Test func aPieceIsHashedOnlyOnceEveryByteOfItIsWritten() throws {
        let geometry = try Self.geometry()
        var written = ByteRangeSet([0..<150])
        #expect(PieceVerification.completed(by: 0..<150, written: written, geometry: geometry, settled: { _ in false }) == [0])
        // A piece written by two segments completes with whichever ends later.
        written.insert(180..<200)
        #expect(PieceVerification.completed(by: 180..<200, written: written, geometry: geometry, settled: { _ in false }).isEmpty)
        written.insert(150..<180)
        #expect(PieceVerification.completed(by: 150..<180, written: written, geometry: geometry, settled: { _ in false }) == [1])
        // A piece already verified or being hashed is not hashed twice.
        #expect(PieceVerification.completed(by: 0..<200, written: written, geometry: geometry, settled: { $0 == 0 }) == [1])
    }

    @Test func theShortLastPieceCompletesAtTheEndOfTheFile() throws {
        let geometry = try Self.geometry()
        let written = ByteRangeSet([900..<950])
        #expect(PieceVerification.completed(by: 940..<950, written: written, geometry: geometry, settled: { _ in false }) == [9])
        #expect(PieceVerification.completed(in: written, geometry: geometry, settled: { _ in false }) == [9])
    }

    @Test func everyCompletePieceOfAWrittenSetIsFound() throws {
        let geometry = try Self.geometry()
        let written = ByteRangeSet([0..<250, 300..<420, 899..<950])
        #expect(PieceVerification.completed(in: written, geometry: geometry, settled: { _ in false }) == [0, 1, 3, 9])
        #expect(PieceVerification.completed(in: written, geometry: geometry, settled: { $0 == 1 }) == [0, 3, 9])
    }

    // MARK: Resume

    @Test func aResumeTrustsOnlyPiecesTheJournalRecordsAsVerified() throws {
        let geometry = try Self.geometry()
        let durable = ByteRangeSet([0..<450, 900..<950])
        let recorded = JournalPieces(length: 100, verified: ByteRangeSet([0..<200]))
        let resumed = PieceVerification.resume(durable: durable, recorded: recorded, geometry: geometry)
        #expect(resumed.verified == [0, 1])
        // Complete but never verified: hashed again before they count; the half piece 4 is kept to be finished.
        #expect(resumed.reverify == [2, 3, 9])
        #expect(resumed.kept == durable)
    }

    @Test func aJournalWithoutPiecesOrWithAnotherPieceLengthVerifiesNothing() throws {
        let geometry = try Self.geometry()
        let durable = ByteRangeSet([0..<300])
        #expect(PieceVerification.resume(durable: durable, recorded: nil, geometry: geometry).verified.isEmpty)
        let other = JournalPieces(length: 50, verified: ByteRangeSet([0..<300]))
        let resumed = PieceVerification.resume(durable: durable, recorded: other, geometry: geometry)
        #expect(resumed.verified.isEmpty)
        #expect(resumed.reverify == [0, 1, 2])
    }

    @Test func aVerifiedPieceOutsideTheDurableRangesIsNotTrusted() throws {
        let geometry = try Self.geometry()
        let recorded = JournalPieces(length: 100, verified: ByteRangeSet([0..<300]))
        let resumed = PieceVerification.resume(durable: ByteRangeSet([0..<250]), recorded: recorded, geometry: geometry)
        #expect(resumed.verified == [0, 1])
    }

    // MARK: A bad piece

    func mismatch(servedBy: Set<Int>, refetches: Int = 0, earlier: Bool = false) -> PieceVerification.Mismatch {
        PieceVerification.Mismatch(piece: 3, range: 300..<400, servedBy: servedBy, fromEarlierRun: earlier, refetchesSoFar: refetches)
    }

    @Test func aMirrorServingWrongBytesIsDroppedWhenAnotherIsLeft() {
        #expect(PieceVerification.decide(mismatch(servedBy: [1]), live: [0, 1, 2]) == .refetch(dropping: [1]))
    }

    @Test func wrongBytesOnTheShortLastPieceAreTreatedAlike() {
        let last = PieceVerification.Mismatch(piece: 9, range: 900..<950, servedBy: [0], fromEarlierRun: false, refetchesSoFar: 0)
        #expect(PieceVerification.decide(last, live: [0, 1]) == .refetch(dropping: [0]))
    }

    @Test func aPieceSpanningTwoSegmentsBlamesEveryMirrorThatServedIt() {
        // Two mirrors each served half; a hash cannot tell which half was wrong, so both go when a third is left.
        #expect(PieceVerification.decide(mismatch(servedBy: [2, 0]), live: [0, 1, 2]) == .refetch(dropping: [0, 2]))
        // With no third mirror, both stay for one more try; a second failure names both.
        #expect(PieceVerification.decide(mismatch(servedBy: [0, 1]), live: [0, 1]) == .refetch(dropping: []))
        guard case .fail(let blamed, let why) = PieceVerification.decide(mismatch(servedBy: [0, 1], refetches: 1), live: [0, 1]) else {
            Issue.record("a second failure from every mirror left must end the download")
            return
        }
        #expect(blamed == [0, 1])
        #expect(why.contains("every mirror left served part of it"))
    }

    @Test func theOnlyMirrorServingWrongBytesGetsOneMoreTryThenFails() {
        #expect(PieceVerification.decide(mismatch(servedBy: [0]), live: [0]) == .refetch(dropping: []))
        guard case .fail(let blamed, let why) = PieceVerification.decide(mismatch(servedBy: [0], refetches: 1), live: [0]) else {
            Issue.record("the only mirror failing twice must end the download")
            return
        }
        #expect(blamed == [0])
        #expect(why.contains("no other mirror is left"))
    }

    @Test func aPieceThatKeepsFailingEndsTheDownloadAfterTheBound() {
        let bound = PieceVerification.maximumRefetches
        #expect(PieceVerification.decide(mismatch(servedBy: [3], refetches: bound - 1), live: [3, 4]) == .refetch(dropping: [3]))
        guard case .fail(let blamed, _) = PieceVerification.decide(mismatch(servedBy: [4], refetches: bound), live: [4, 5]) else {
            Issue.record("a piece past the refetch bound must end the download")
            return
        }
        #expect(blamed == [4])
    }

    @Test func bytesFromAnEarlierRunBlameNoMirror() {
        #expect(PieceVerification.decide(mismatch(servedBy: [], earlier: true), live: [0]) == .refetch(dropping: []))
        // A mirror dropped meanwhile is not live: nothing to drop, the piece is fetched again.
        #expect(PieceVerification.decide(mismatch(servedBy: [1]), live: [0]) == .refetch(dropping: []))
    }
}
