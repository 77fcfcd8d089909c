import HaulIO
import SystemPackage

/// Everything a resume needs, as one journal record holds it (see `docs/journal-format.md`).
///
/// **Durability contract**: `durable` may only contain bytes of the `.part` file that were written *and*
/// `fdatasync`ed before the record holding this state is written. The journal is only as true as that
/// ordering; the engine keeps it (data sync first, then ``ResumeJournal/checkpoint(_:)``).
public struct JournalState: Sendable, Equatable, CustomStringConvertible {
    /// The format version this build writes (file header and records).
    public static let formatVersion: UInt16 = 2
    /// The format versions this build reads. Version 1 records have no ``resolvedURL`` or ``bootID``.
    public static let readableVersions: ClosedRange<UInt16> = 1...2

    /// The primary URL, as given (UTF-8, at most ``JournalLimits/maxURLBytes`` bytes).
    public var url: String
    /// Mirror URLs (at most ``JournalLimits/maxMirrors``, each at most ``JournalLimits/maxURLBytes`` bytes).
    public var mirrors: [String]
    /// The ETag the server sent, as raw header-value bytes including the quotes (and a weak tag's `W/`); nil
    /// if none. With ``lastModified`` and ``totalLength``, the download's identity: every response of a resume
    /// is compared with all three.
    public var etag: [UInt8]?
    /// The server's Last-Modified, in seconds since the Unix epoch; nil if none.
    public var lastModified: Int64?
    /// The resource's total length in bytes (>= 0).
    public var totalLength: Int64
    /// The minimum segment size the download was planned with (>= 0).
    public var minimumSegmentSize: Int64
    /// The expected checksum, if the user gave one.
    public var checksum: JournalChecksum?
    /// When the download was first started, in seconds since the Unix epoch.
    public var createdAt: Int64
    /// Byte ranges of the `.part` file that are durably on disk (half-open, inside `0..<totalLength`).
    ///
    /// When ``bootID`` is set, only as durable as the page cache of that boot: read it through
    /// ``trustedDurable(currentBootID:)``.
    public var durable: ByteRangeSet
    /// The URL the primary ``url`` finally resolved to after redirects (UTF-8, at most
    /// ``JournalLimits/maxURLBytes`` bytes); nil if not known, or in a version 1 record.
    public var resolvedURL: String?
    /// Set when the data file was not `fdatasync`ed before the record was written (`--no-sync`): the kernel
    /// boot id (`/proc/sys/kernel/random/boot_id`, 36 ASCII characters without the newline) of the boot
    /// that wrote the record. The data then lived in that boot's page cache; after a reboot it may be gone,
    /// so ``durable`` must not be trusted. Nil when the data was synced (and in version 1 records). At most
    /// ``JournalLimits/maxBootIDBytes`` bytes.
    public var bootID: [UInt8]?
    /// For a download with piece hashes: the piece length and the pieces whose hash matched (their bytes are
    /// in ``durable`` too). A resume trusts a complete piece only when it is listed here; others are hashed
    /// again first. Nil for a download without piece hashes (and in records written before this field).
    public var pieces: JournalPieces?

    public init(
        url: String,
        mirrors: [String] = [],
        etag: [UInt8]? = nil,
        lastModified: Int64? = nil,
        totalLength: Int64,
        minimumSegmentSize: Int64,
        checksum: JournalChecksum? = nil,
        createdAt: Int64,
        durable: ByteRangeSet = ByteRangeSet(),
        resolvedURL: String? = nil,
        bootID: [UInt8]? = nil,
        pieces: JournalPieces? = nil
    ) {
        self.url = url
        self.mirrors = mirrors
        self.etag = etag
        self.lastModified = lastModified
        self.totalLength = totalLength
        self.minimumSegmentSize = minimumSegmentSize
        self.checksum = checksum
        self.createdAt = createdAt
        self.durable = durable
        self.resolvedURL = resolvedURL
        self.bootID = bootID
        self.pieces = pieces
    }

    /// The ranges a resume may skip: ``durable``, unless the record was written without syncing the data
    /// (``bootID`` set) during a boot other than `currentBootID` — then nothing, since the page cache that
    /// held the data is gone. A record with a boot id is distrusted when the current one is unknown (nil).
    public func trustedDurable(currentBootID: [UInt8]?) -> ByteRangeSet {
        guard let bootID else { return durable }
        return bootID == currentBootID ? durable : ByteRangeSet()
    }

    /// This boot's id: `/proc/sys/kernel/random/boot_id` without its newline (36 ASCII characters), or nil
    /// if it cannot be read. Read once per process (it cannot change while the process runs).
    package static func currentBootID() -> [UInt8]? { cachedBootID }

    private static let cachedBootID: [UInt8]? = readBootID()

    private static func readBootID() -> [UInt8]? {
        guard let file = try? FileDescriptor.opening("/proc/sys/kernel/random/boot_id", .readOnly) else { return nil }
        var buffer = [UInt8](repeating: 0, count: JournalLimits.maxBootIDBytes + 1)
        var count = 0
        while count < buffer.count {
            // swift-system retries EINTR.
            let got = buffer.withUnsafeMutableBytes { raw in
                try? file.descriptor.read(into: UnsafeMutableRawBufferPointer(rebasing: raw[count...]))
            }
            guard let got else { return nil }
            if got == 0 { break }
            count += got
        }
        var id = Array(buffer[0..<count])
        while let last = id.last, last == UInt8(ascii: "\n") || last == UInt8(ascii: " ") { id.removeLast() }
        guard !id.isEmpty, id.count <= JournalLimits.maxBootIDBytes else { return nil }
        return id
    }

    public var description: String {
        var parts = ["url: \(url)", "total: \(totalLength)", "durable: \(durable.count) bytes in \(durable.ranges.count) ranges"]
        if !mirrors.isEmpty { parts.append("mirrors: \(mirrors.count)") }
        if let etag { parts.append("etag: \(String(decoding: etag, as: UTF8.self))") }
        if let lastModified { parts.append("last-modified: \(lastModified)") }
        if let checksum { parts.append("checksum: \(checksum.algorithm):\(checksum.hex)") }
        if let resolvedURL { parts.append("resolved: \(resolvedURL)") }
        if let bootID { parts.append("unsynced, boot: \(String(decoding: bootID, as: UTF8.self))") }
        if let pieces { parts.append("verified: \(pieces.verified.count) bytes in pieces of \(pieces.length)") }
        return "JournalState(" + parts.joined(separator: ", ") + ")"
    }
}

/// The pieces of a download with piece hashes whose hash matched: ``JournalState/pieces``.
public struct JournalPieces: Sendable, Equatable {
    /// Bytes per piece (at least 1); the last piece of the file may be shorter.
    public var length: Int64
    /// The bytes of the verified pieces: each range starts on a piece boundary and ends on one (or at the
    /// file's end).
    public var verified: ByteRangeSet

    public init(length: Int64, verified: ByteRangeSet = ByteRangeSet()) {
        self.length = length
        self.verified = verified
    }

    /// These pieces less any byte not in `durable` (a checkpoint records no verified byte it does not
    /// record as durable): whole pieces only, so a piece cut by `durable` is left out.
    public func restricted(to durable: ByteRangeSet, totalLength: Int64) -> JournalPieces {
        var kept = ByteRangeSet()
        for range in verified.intersection(durable).ranges {
            // Inward to piece boundaries: a piece cut anywhere is not kept.
            let start = (range.lowerBound + length - 1) / length * length
            let end = range.upperBound == totalLength ? totalLength : range.upperBound / length * length
            if start < end { kept.insert(start..<end) }
        }
        return JournalPieces(length: length, verified: kept)
    }
}

/// An expected checksum given for the download: algorithm name (e.g. "sha256") and hex digest.
public struct JournalChecksum: Sendable, Equatable {
    /// The algorithm's name (at most ``JournalLimits/maxChecksumAlgorithmBytes`` bytes of UTF-8).
    public var algorithm: String
    /// The expected digest in hex (at most ``JournalLimits/maxChecksumHexBytes`` bytes of UTF-8).
    public var hex: String

    public init(algorithm: String, hex: String) {
        self.algorithm = algorithm
        self.hex = hex
    }
}

/// Sanity bounds the decoder enforces on every length before it reads or allocates anything.
package enum JournalLimits {
    /// Longest URL (primary or mirror), in bytes.
    package static let maxURLBytes = 8 * 1024
    /// Most mirrors.
    package static let maxMirrors = 64
    /// Longest ETag, in bytes.
    package static let maxETagBytes = 4 * 1024
    /// Longest checksum algorithm name, in bytes.
    package static let maxChecksumAlgorithmBytes = 32
    /// Longest checksum hex digest, in bytes.
    package static let maxChecksumHexBytes = 256
    /// Longest boot id, in bytes (Linux writes 36).
    package static let maxBootIDBytes = 64
    /// Most durable ranges.
    package static let maxRanges = 1_000_000
    /// Smallest slot (also the alignment of slots and of the header block).
    package static let minSlotCapacity = 4096
    /// Largest slot. A maximal record (1,000,000 ranges of 20-byte varints plus 65 maximal URLs) is
    /// about 21 MB, so this is never the binding limit for a state the other bounds allow.
    package static let maxSlotCapacity = 64 * 1024 * 1024
}
