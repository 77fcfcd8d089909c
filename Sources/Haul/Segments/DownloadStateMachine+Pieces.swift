import HaulHTTP
import HaulIO
import HaulJournal
import Logging

/// What a download checks beyond the whole-file ``Checksum``: the request's ``PieceHashes`` (each piece hashed
/// once written, a bad one fetched again and its mirrors dropped) and the `Repr-Digest` fields of the
/// responses it took the file from (checked at the end, with the checksum).
struct IntegrityChecks {
    let pieceHashes: PieceHashes?
    /// Set up once the file's length is known (and checked against the hashes).
    var ledger: PieceLedger?
    /// Distinct `Repr-Digest` claims of the accepted responses (at most ``maximumClaims``).
    var representationDigests: [RepresentationDigestClaim] = []

    static let maximumClaims = 8

    init(pieceHashes: PieceHashes?) {
        self.pieceHashes = pieceHashes
    }

    /// The file starts over: nothing of it is verified, and the responses that made claims are gone.
    mutating func reset() {
        nextEpoch += 1
        ledger = nil
        representationDigests = []
    }

    /// The epoch the next ledger starts at, so that hashes of a discarded file are never taken for its successor's.
    var nextEpoch = 0
}

/// A digest a server claimed for the whole file in `Repr-Digest` (RFC 9530), checked when the file is complete.
struct RepresentationDigestClaim: Sendable, Equatable {
    let algorithm: DigestAlgorithm
    /// Lowercase hex.
    let hex: String
    /// The response that said so.
    let url: String

    /// The IANA name the field used (`sha-256`).
    var algorithmName: String { algorithm == .sha512 ? "sha-512" : "sha-256" }
}

/// The state of every piece of one download: verified, being hashed, who served it, how often it was fetched again.
struct PieceLedger {
    let geometry: PieceVerification.Geometry
    /// Hash results of another epoch (before a restart) are dropped.
    let epoch: Int
    private(set) var verified: [Bool]
    /// The bytes of the verified pieces, as the journal records them.
    private(set) var verifiedBytes = ByteRangeSet()
    private(set) var verifiedCount = 0
    var hashing: Set<Int> = []
    /// The mirrors that wrote bytes of each piece not verified yet, in this run.
    var servedBy: [Int: Set<Int>] = [:]
    /// Pieces with bytes from an earlier run (a resumed journal), whose mirrors are unknown.
    var fromEarlierRun: Set<Int> = []
    var refetches: [Int: Int] = [:]
    /// The last piece and mirror noted, so that the many writes into one piece cost one comparison each.
    private var lastNoted: (piece: Int, mirror: Int)?

    init(geometry: PieceVerification.Geometry, epoch: Int) {
        self.geometry = geometry
        self.epoch = epoch
        verified = Array(repeating: false, count: geometry.count)
    }

    var allVerified: Bool { verifiedCount == geometry.count }
    func isSettled(_ piece: Int) -> Bool { verified[piece] || hashing.contains(piece) }

    mutating func markVerified(_ piece: Int) {
        guard !verified[piece] else { return }
        verified[piece] = true
        verifiedCount += 1
        verifiedBytes.insert(geometry.range(of: piece))
        servedBy[piece] = nil
        fromEarlierRun.remove(piece)
    }

    /// `mirror` wrote the bytes `range`.
    mutating func note(_ range: Range<Int64>, from mirror: Int) {
        for piece in geometry.pieces(overlapping: range) {
            if let lastNoted, lastNoted.piece == piece, lastNoted.mirror == mirror { continue }
            servedBy[piece, default: []].insert(mirror)
            lastNoted = (piece, mirror)
        }
    }

    /// The piece goes back to be fetched again: nothing of it is known any more.
    mutating func reopen(_ piece: Int) {
        servedBy[piece] = nil
        fromEarlierRun.remove(piece)
        refetches[piece, default: 0] += 1
        if lastNoted?.piece == piece { lastNoted = nil }
    }
}

/// One piece to hash, as the driver's ``PieceHasher`` gets it.
struct PieceCheck: Sendable, Equatable {
    let piece: Int
    let range: Range<Int64>
    let algorithm: DigestAlgorithm
    let expected: String
    let epoch: Int
}

/// What hashing one piece came to: its digest, or why the file could not be read.
struct PieceHashResult: Sendable {
    let check: PieceCheck
    let outcome: Result<String, SystemError>
}

extension DownloadStateMachine {
    /// The ledger, set up on first use once the length is known; nil without piece hashes. A length the
    /// hashes do not cover fails the download (``PieceHashes/check(size:)``).
    mutating func pieceLedger() -> Result<PieceLedger, HaulError>? {
        if let ledger = integrity.ledger { return .success(ledger) }
        guard let hashes = integrity.pieceHashes, let total else { return nil }
        do {
            let ledger = PieceLedger(geometry: try PieceVerification.Geometry(hashes, total: total), epoch: integrity.nextEpoch)
            integrity.ledger = ledger
            return .success(ledger)
        } catch {
            return .failure(pieceGeometryError(error))
        }
    }

    /// The error for piece hashes that do not fit the server's length, before a byte is written.
    func pieceGeometryError(_ error: PieceHashesError) -> HaulError {
        .mirrorMismatch(url: mirrors.primary.given.description, detail: "its length does not fit the request's \(error)")
    }

    /// Why a file of `length` bytes cannot be prepared: the piece hashes do not cover it; nil when they do
    /// (or there are none, or the length is unknown). Asked before any action that prepares or opens the file.
    func pieceGeometryFailure(_ length: Int64?) -> HaulError? {
        guard let hashes = integrity.pieceHashes, let length else { return nil }
        do { try hashes.check(size: length) } catch { return pieceGeometryError(error) }
        return nil
    }

    /// What the driver does with a response head, settled: a file preparation the piece hashes do not fit
    /// refuses the response, and a response accepted as (part of) the file has its `Repr-Digest` noted.
    /// `consuming`: the step handed back is the one given, not a copy of it (its actions and all).
    mutating func settle(_ step: consuming HeadStep, head: ResponseHead, on id: Int) -> HeadStep {
        guard case .answer(let answer, let preparation, _) = step else { return step }
        if let preparation, let error = pieceGeometryFailure(preparation.length) { return .refuse(error) }
        // The assignment (one reference), not its URL copied out of it.
        if answer.window != nil, let exchange = connection(id, { $0.exchange }) { noteRepresentationDigest(head, url: exchange.url) }
        return step
    }

    /// The verified pieces, for the journal's next record; nil without piece hashes.
    var journalPieces: JournalPieces? {
        guard let hashes = integrity.pieceHashes else { return nil }
        return JournalPieces(length: hashes.length, verified: integrity.ledger?.verifiedBytes ?? ByteRangeSet())
    }

    /// Whether nothing about the pieces holds up the finish: every piece verified (or no piece hashes).
    var piecesSettled: Bool { integrity.pieceHashes == nil || integrity.ledger?.allVerified == true }

    /// `range` was written by `mirror`'s response: the pieces it completes are hashed.
    mutating func piecesWritten(_ range: Range<Int64>, by mirror: Int?) -> [Action] {
        guard integrity.pieceHashes != nil, let planner else { return [] }
        switch pieceLedger() {
        case nil: return []
        case .failure(let error): return fail(error)
        case .success(var ledger):
            if let mirror { ledger.note(range, from: mirror) }
            let due = PieceVerification.completed(by: range, written: planner.written, geometry: ledger.geometry, settled: ledger.isSettled)
            integrity.ledger = ledger
            return hash(due)
        }
    }

    /// Every complete piece not hashed yet: the safety net before the finish (a body whose length was learnt
    /// only at its end never went through ``piecesWritten(_:by:)``).
    mutating func hashUnsettledPieces() -> [Action] {
        guard let planner else { return [] }
        switch pieceLedger() {
        case nil: return []
        case .failure(let error): return fail(error)
        case .success(let ledger):
            let due = PieceVerification.completed(in: planner.written, geometry: ledger.geometry, settled: ledger.isSettled)
            if due.isEmpty && ledger.hashing.isEmpty && !ledger.allVerified {
                return fail(.unexpected("every byte is written, but \(ledger.geometry.count - ledger.verifiedCount) pieces are neither verified nor being hashed"))
            }
            return hash(due)
        }
    }

    /// A resume keeps the journal's durable bytes; complete pieces it does not record as verified are
    /// hashed again before they count (``PieceVerification/resume(durable:recorded:geometry:)``).
    mutating func resumePieces(durable: ByteRangeSet, recorded: JournalPieces?) -> [Action] {
        guard integrity.pieceHashes != nil else { return [] }
        switch pieceLedger() {
        case nil: return []
        case .failure(let error): return fail(error)
        case .success(var ledger):
            let resumed = PieceVerification.resume(durable: durable, recorded: recorded, geometry: ledger.geometry)
            for piece in resumed.verified { ledger.markVerified(piece) }
            for range in durable.ranges {
                for piece in ledger.geometry.pieces(overlapping: range) where !ledger.verified[piece] { ledger.fromEarlierRun.insert(piece) }
            }
            integrity.ledger = ledger
            let verified = resumed.verified.count, again = resumed.reverify.count
            return [.log(.debug, "resuming pieces", { ["haul.pieces.verified": "\(verified)", "haul.pieces.rehashed": "\(again)"] })]
                + hash(resumed.reverify)
        }
    }

    private mutating func hash(_ pieces: [Int]) -> [Action] {
        guard !pieces.isEmpty, var ledger = integrity.ledger else { return [] }
        let hashes = ledger.geometry.hashes
        let checks = pieces.map { piece in
            ledger.hashing.insert(piece)
            return PieceCheck(piece: piece, range: ledger.geometry.range(of: piece), algorithm: hashes.algorithm,
                              expected: hashes.digests[piece], epoch: ledger.epoch)
        }
        integrity.ledger = ledger
        return [.hashPieces(checks)]
    }

    /// A piece was hashed (or could not be read back: a disk failure).
    mutating func pieceHashed(_ result: PieceHashResult) -> [Action] {
        guard isActive, var ledger = integrity.ledger, result.check.epoch == ledger.epoch else { return [] }
        let piece = result.check.piece
        ledger.hashing.remove(piece)
        let actual: String
        switch result.outcome {
        case .failure(let error):
            integrity.ledger = ledger
            return fail(.disk(path: fileLabel, error))
        case .success(let digest): actual = digest
        }
        if actual == result.check.expected {
            ledger.markVerified(piece)
            integrity.ledger = ledger
            return finishIfDone()
        }
        let mismatch = PieceVerification.Mismatch(
            piece: piece, range: result.check.range, servedBy: ledger.servedBy[piece] ?? [],
            fromEarlierRun: ledger.fromEarlierRun.contains(piece), refetchesSoFar: ledger.refetches[piece] ?? 0)
        let live = Set(mirrors.indices.filter { !mirrors[$0].dropped })
        integrity.ledger = ledger
        switch PieceVerification.decide(mismatch, live: live) {
        case .fail(let blamed, let why):
            return fail(pieceError(result.check, actual: actual, blamed: blamed, why: why))
        case .refetch(let dropping):
            guard rangesSupported else {
                return fail(pieceError(result.check, actual: actual, blamed: mismatch.servedBy.sorted(),
                                       why: "the server does not support ranges, so the piece cannot be fetched again alone"))
            }
            return refetch(result.check, actual: actual, dropping: dropping)
        }
    }

    private func pieceError(_ check: PieceCheck, actual: String, blamed: [Int], why: String) -> HaulError {
        .digestMismatch(DigestMismatch(.piece(index: check.piece, range: check.range, mirrors: blamed.map { mirrors[$0].given.description }, why: why),
                                       path: fileLabel, algorithm: check.algorithm.rawValue, expected: check.expected, actual: actual))
    }

    /// Drops the mirrors blamed for a bad piece (their connections move to the others, a request under way
    /// is stopped) and fetches the piece's range again.
    private mutating func refetch(_ check: PieceCheck, actual: String, dropping: [Int]) -> [Action] {
        let range = check.range
        let names = dropping.map { mirrors[$0].given.description }
        for mirror in dropping { _ = mirrors.drop(mirror) }
        var actions: [Action] = []
        for id in connections.indices where dropping.contains(connections[id].mirror) {
            connections[id].mirror = mirrors.mirror(forConnection: id)
            // Its exchange ends with a "closed" failure and goes back to work on the new mirror.
            if connections[id].isBusy { actions.append(.stop(connection: id)) }
        }
        planner?.reopen(range)
        bytesDone -= Int64(range.count)
        integrity.ledger?.reopen(check.piece)
        let what = "piece \(check.piece) (bytes \(range.lowerBound)-\(range.upperBound - 1)) failed its \(check.algorithm.rawValue) check"
        notices.append(names.isEmpty
            ? "\(what): fetching it again"
            : "\(what): dropping \(names.joined(separator: " and ")) for this download (\(names.count == 1 ? "it" : "each") served bytes of it), fetching it again")
        actions.append(.log(.notice, "a piece failed its hash: fetching it again", {
            ["haul.piece": "\(check.piece)", LogKey.range: "\(range.logText)", "haul.expected": "\(check.expected)",
             "haul.actual": "\(actual)", "haul.dropped": "\(names.isEmpty ? "-" : names.joined(separator: " "))"]
        }))
        return actions + wakeIdleConnections()
    }

    // MARK: Repr-Digest

    /// A response accepted as (part of) the file: the whole-file digests its `Repr-Digest` claims
    /// (sha-256, sha-512; others ignored) are checked once the file is complete.
    mutating func noteRepresentationDigest(_ head: ResponseHead, url: HTTPURL) {
        let values = head.fields.all("repr-digest")
        guard !values.isEmpty else { return }
        for member in RepresentationDigest.members(of: values) {
            let algorithm: DigestAlgorithm
            switch member.algorithm {
            case "sha-256": algorithm = .sha256
            case "sha-512": algorithm = .sha512
            default: continue
            }
            guard member.digest.count == algorithm.byteCount else { continue }
            let hex = Self.hex(member.digest)
            guard !integrity.representationDigests.contains(where: { $0.algorithm == algorithm && $0.hex == hex }),
                  integrity.representationDigests.count < IntegrityChecks.maximumClaims else { continue }
            integrity.representationDigests.append(RepresentationDigestClaim(algorithm: algorithm, hex: hex, url: url.description))
        }
    }

    private static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var text: [UInt8] = []
        text.reserveCapacity(bytes.count * 2)
        for byte in bytes {
            text.append(digits[Int(byte >> 4)])
            text.append(digits[Int(byte & 0xF)])
        }
        return String(decoding: text, as: UTF8.self)
    }
}
