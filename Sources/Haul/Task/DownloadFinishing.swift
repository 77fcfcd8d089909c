import HaulHTTP
import HaulIO
import HaulJournal

/// The end of a download whose bytes are all in: the checksum checked, the file made durable, renamed to
/// its destination, its journal removed. (A durable download of a client goes through the client's
/// ``GroupCommit`` instead, which syncs many finishing files together; the checksum comes first either way.)
/// A download kept in memory has none of that: its bytes are read back and checked.
enum DownloadFinishing {
    /// Finishes `finished` into `destination` and calls `report` once with the outcome — the body of a
    /// download kept in memory, nil for the others — on whatever thread finished it. `transferEnded` is
    /// called, on the caller's thread, as soon as the rest is only a wait for the disk or the hash: a caller
    /// limiting concurrent transfers may start the next download then.
    static func start(_ finished: SegmentedDownload.Finished, destination: String, checksum: Checksum?, setsRemoteTime: Bool = false, synchronizes: Bool,
                      commits: GroupCommit, transferEnded: () -> Void, report reportOutcome: @escaping @Sendable (Result<[UInt8]?, HaulError>) -> Void) {
        // A finish that fails (a checksum or digest mismatch, a failed sync or name) keeps the bytes as
        // `NAME.part`, as it always has: a file without a name takes that name first.
        let report: @Sendable (Result<[UInt8]?, HaulError>) -> Void = { outcome in
            if case .failure = outcome, !finished.inMemory, let file = finished.file, file.isUnnamed { FinalNaming.keepBytes(of: file) }
            reportOutcome(outcome)
        }
        if finished.inMemory, let file = finished.file {
            let readBack = { @Sendable in
                report(Result { () throws(HaulError) -> [UInt8]? in try body(of: file, finished, checksum: checksum) })
            }
            // Copying a few KiB is quicker here than a hop to another thread; hashing, or copying megabytes,
            // would hold up every connection on the loop.
            if checksum != nil || !finished.representationDigests.isEmpty || finished.bytes > 256 << 10 {
                transferEnded()
                BlockingWork.start(readBack)
            } else {
                readBack()
            }
            return
        }
        // The server's validators go with the file (its attributes survive the rename), for a later run's
        // conditional request; with `-R` the file takes the server's time. Both best effort.
        if let file = finished.file {
            StoredValidators(of: finished).write(on: file.fileDescriptor)
            if setsRemoteTime, let lastModified = finished.lastModified {
                try? file.fileDescriptor.setModificationTime(secondsSinceEpoch: lastModified.secondsSinceEpoch)
            }
        }
        // A durable file goes to the client's group commit, which syncs it together with every other file
        // finishing meanwhile; hashing comes first, off the loop.
        if synchronizes, let file = finished.file {
            transferEnded()
            let entry = GroupCommit.Entry(
                file: file, partPath: finished.partPath, destination: destination,
                journalPath: finished.journaled ? finished.journalPath : nil, completion: { report($0.map { nil }) },
                finalNameIsNew: finished.finalNameIsNew)
            if checksum != nil || !finished.representationDigests.isEmpty {
                BlockingWork.start {
                    do throws(HaulError) {
                        try verify(finished, checksum: checksum)
                        commits.submit(entry)
                    } catch {
                        report(.failure(error))
                    }
                }
            } else {
                commits.submit(entry)
            }
            return
        }
        let finish = { @Sendable in
            report(Result { () throws(HaulError) -> [UInt8]? in
                try Self.finish(finished, destination: destination, checksum: checksum, synchronizes: false)
                return nil
            })
        }
        // Hashing takes long; without it the finish is one rename, quicker done here.
        if checksum != nil || !finished.representationDigests.isEmpty {
            transferEnded()
            BlockingWork.start(finish)
        } else {
            finish()
        }
    }

    /// The bytes of a download kept in memory, read back from its in-memory file and checked against
    /// `checksum`. The file holds exactly ``SegmentedDownload/Finished/bytes`` (checked before the finish).
    static func body(of file: OutputFile, _ finished: SegmentedDownload.Finished, checksum: Checksum?) throws(HaulError) -> [UInt8] {
        let bytes: [UInt8]
        do { bytes = try file.readAll() } catch { throw .disk(path: finished.partPath, error) }
        guard Int64(bytes.count) == finished.bytes else {
            throw .unexpected("\(finished.partPath) holds \(bytes.count) bytes, expected \(finished.bytes)")
        }
        try check(finished, checksum: checksum) { algorithms throws(SystemError) in
            var digests: [DigestAlgorithm: String] = [:]
            for algorithm in algorithms { digests[algorithm] = try FileDigest.hex(of: bytes, algorithm: algorithm) }
            return digests
        }
        return bytes
    }

    /// Checks the file against the expected checksum and the servers' `Repr-Digest` claims, in one read of
    /// it through its open descriptor (a file without a name has no path); nothing to do without either.
    static func verify(_ finished: SegmentedDownload.Finished, checksum: Checksum?) throws(HaulError) {
        try check(finished, checksum: checksum) { algorithms throws(SystemError) in
            guard let file = finished.file else { return try FileDigest.hexes(of: finished.partPath, algorithms: algorithms) }
            return try FileDigest.hexes(of: file.fileDescriptor, algorithms: algorithms)
        }
    }

    /// The checksum first (its mismatch is the one a caller asked about), then each `Repr-Digest` claim.
    private static func check(_ finished: SegmentedDownload.Finished, checksum: Checksum?,
                              digests: (Set<DigestAlgorithm>) throws(SystemError) -> [DigestAlgorithm: String]) throws(HaulError) {
        let algorithms = Set((checksum.map { [$0.algorithm] } ?? []) + finished.representationDigests.map(\.algorithm))
        guard !algorithms.isEmpty else { return }
        let actual: [DigestAlgorithm: String]
        do { actual = try digests(algorithms) } catch { throw .disk(path: finished.partPath, error) }
        // A digest missing from `actual` (never) reads as "" and fails: no check is skipped quietly.
        if let checksum, actual[checksum.algorithm] != checksum.hex {
            throw .checksumMismatch(path: finished.partPath, expected: checksum, actual: actual[checksum.algorithm] ?? "")
        }
        for claim in finished.representationDigests {
            let digest = actual[claim.algorithm] ?? ""
            guard digest != claim.hex else { continue }
            throw .digestMismatch(DigestMismatch(.representationDigest(url: claim.url), path: finished.partPath,
                                                 algorithm: claim.algorithmName, expected: claim.hex, actual: digest))
        }
    }

    /// Checksum, sync, atomic rename, journal removal, for one file on its own (a durable download of a
    /// client goes through its ``GroupCommit`` instead).
    static func finish(_ finished: SegmentedDownload.Finished, destination: String, checksum: Checksum?, synchronizes: Bool) throws(HaulError) {
        // A streamed download has delivered everything already: there is no file to check or rename.
        guard let file = finished.file else { return }
        try verify(finished, checksum: checksum)
        do {
            if synchronizes { try file.synchronize() }
        } catch {
            throw .disk(path: destination, error)
        }
        do throws(HaulError) {
            try WorkingFileCheck.check(file, partPath: finished.partPath, destination: destination)
        } catch {
            // The journal describes a file that is no longer at its name: a rerun must not trust it with another's bytes.
            if finished.journaled { try? ResumeJournal.remove(path: finished.journalPath) }
            throw error
        }
        try FinalNaming.name(file, partPath: finished.partPath, destination: destination, mustBeNew: finished.finalNameIsNew)
        do {
            // The name is durable only once the directory is: without this a power cut could bring back
            // `.part` (or nothing) after haul said the file was there.
            if synchronizes { try OutputFile.synchronizeDirectory(containing: destination) }
        } catch {
            throw .disk(path: destination, error)
        }
        // The file is complete under its final name; the journal has nothing left to describe.
        if finished.journaled { try? ResumeJournal.remove(path: finished.journalPath) }
    }
}
