import Glibc
import HaulHTTP
import HaulIO

/// Where a download's body bytes go — a `.part` file, memory (an anonymous file, at most a limit) or a
/// stream delivered in order — behind one type, so that a ``SegmentWorker`` has no mode branches.
///
/// Loop-confined. The file is opened when the download learns its name or length (``prepare(length:preallocate:partPath:resolvedURL:)``,
/// ``openPartial(_:)``), so it may be nil before the probe's answer.
final class BodySink: @unchecked Sendable {
    // @unchecked Sendable: touched on the download's event loop only.

    let kind: BodyReceivePath.Sink
    private(set) var file: OutputFile?
    let stream: OrderedStream?
    /// Nothing past this many bytes is ever written into memory (``DownloadRequest/Destination/memory(limit:)``).
    let memoryLimit: Int64?
    /// Nothing past this many bytes is written anywhere: the memory limit or
    /// ``DownloadOptions/maximumFileSize``, the smaller of both.
    let sizeLimit: Int64?
    /// The resource's length once known: no byte is written past it.
    private(set) var bound: Int64?
    /// What messages call the file: the `.part` path, or the URL marked "(in memory)".
    var label: String
    /// The `.part` was created empty by this run and nothing was written yet: ``prepare(length:preallocate:partPath:resolvedURL:)``
    /// needs no `fstat` to learn that it holds nothing (one syscall less per small file).
    var partKnownEmpty = false
    /// Spliced bytes handed to writer threads and not yet written (``handOff(piped:count:at:completion:)``);
    /// made by the first hand-off, so that small files and TLS never pay for it.
    private var handOffs: WritesInFlight?
    /// Runs on the writer thread before each handed-off write (tests hold one with it).
    private let beforeEachHandedOffWrite: (@Sendable () -> Void)?
    /// Set at the download's end: a hand-off after it would land in a file given up.
    private var handOffsClosed = false

    init(file: OutputFile?, stream: OrderedStream?, memoryLimit: Int64?, maximumFileSize: Int64? = nil, partKnownEmpty: Bool = false,
         label: String, beforeEachHandedOffWrite: (@Sendable () -> Void)? = nil) {
        self.beforeEachHandedOffWrite = beforeEachHandedOffWrite
        self.kind = stream != nil ? .stream : memoryLimit != nil ? .memory : .file
        self.file = file
        self.stream = stream
        self.memoryLimit = memoryLimit
        self.sizeLimit = Self.smaller(memoryLimit, maximumFileSize)
        self.label = label
        self.partKnownEmpty = partKnownEmpty
    }

    /// The smaller of two optional limits; nil when neither is set.
    static func smaller(_ first: Int64?, _ second: Int64?) -> Int64? {
        switch (first, second) {
        case (let first?, let second?): min(first, second)
        case (let first, let second): first ?? second
        }
    }

    /// Takes the `.part` a directory download's name resolution opened (`knownEmpty`: it created it just now).
    func adopt(_ file: OutputFile, knownEmpty: Bool = false) {
        self.file = file
        partKnownEmpty = knownEmpty
    }

    /// Opens the `.part` of a download resumed from its journal (kept as it is), unless it is open already.
    func openPartial(_ path: String, length: Int64) throws(HaulError) {
        // No wait for writes under way (``HandedOffWriteOrder/Step/openPartialFile``): nothing in the file changes.
        bound = length
        guard file == nil else { return }
        do { file = try OutputFile.open(path, truncate: false) } catch { throw .disk(path: path, error) }
    }

    /// Makes the file empty and, when `preallocate`, reserves `length` bytes — after checking that the
    /// filesystem has room for them (counting what the file already holds, since it is truncated). A
    /// stream only learns the bound; memory is held to its limit.
    func prepare(length: Int64?, preallocate: Bool, partPath: String, resolvedURL: HTTPURL) throws(HaulError) {
        // A write still under way from an exchange that was stopped would land in the file made empty here;
        // this answers a head on the spot and cannot wait for it (the probe waited before it was sent).
        if HandedOffWriteOrder.decide(.prepareFile, writesUnderway: hasHandOffsUnderway) == .refuse {
            throw .unexpected("\(label) would be emptied while spliced bytes handed to a writer are still being written into it")
        }
        bound = length
        let size = length ?? 0
        switch kind {
        case .stream:
            return
        case .memory:
            // Checked when the length was learnt; again here, the one place every length passes on its way
            // to the file. Memory is not a filesystem: no free space to check, nothing to reserve.
            if let memoryLimit, size > memoryLimit {
                throw .responseTooLarge(url: resolvedURL.description, limit: Int(memoryLimit), length: size)
            }
            guard let file else { throw .unexpected("a download into memory has no in-memory file") }
            do {
                if try file.size() > 0 { try file.truncate(to: 0) }
                try file.truncate(to: size)
            } catch {
                throw .disk(path: label, error)
            }
        case .file:
            let directory = OutputFile.directory(containing: partPath)
            do {
                let file = try self.file ?? OutputFile.open(partPath, truncate: true)
                self.file = file
                let held = partKnownEmpty ? 0 : try file.size()
                partKnownEmpty = false
                // (A filesystem that reports no size, as ramfs, is not refused here: its writes say when it is full.)
                if let available = try OutputFile.availableSpace(in: directory, forWriting: size), size > available + held {
                    throw HaulError.insufficientSpace(path: partPath, needed: size, available: available + held)
                }
                if held > 0 { try file.truncate(to: 0) }
                guard preallocate else { return }
                try file.preallocate(length: size)
                if try file.size() != size { try file.truncate(to: size) }
            } catch let error as SystemError {
                throw .disk(path: partPath, error)
            } catch let error as HaulError {
                throw error
            } catch {
                throw .unexpected("\(error)")
            }
        }
    }

    /// Writes body bytes at `offset`; `proven` false holds a stream's bytes back until ``commit(_:)``.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64, proven: Bool, url: HTTPURL) throws(HaulError) {
        // The body windows make this impossible; if it ever happens, it must not become a wrong file.
        guard offset >= 0, offset + Int64(bytes.count) <= bound ?? Int64.max else {
            throw .unexpected("refusing to write \(bytes.count) bytes at \(offset) of a \(bound ?? -1)-byte file")
        }
        // A known length was held to the limit before any byte came; a body without one (chunked,
        // close-delimited) is stopped by the first bytes that would take it past the limit, none of which is kept.
        if let sizeLimit, offset + Int64(bytes.count) > sizeLimit {
            throw .responseTooLarge(url: url.description, limit: Int(sizeLimit), length: bound)
        }
        if let stream {
            do { try stream.write(bytes, at: offset, proven: proven) } catch { throw Self.streamError(error) }
            return
        }
        guard let file else { throw .unexpected("no file to write \(bytes.count) bytes at \(offset) into") }
        // No wait for a stopped exchange's write of these offsets still under way
        // (``HandedOffWriteOrder/Step/writeFromLoop``): it puts the same bytes there.
        do { try file.write(bytes, at: offset) } catch { throw .disk(path: label, error) }
    }

    /// Moves `count` spliced body bytes from the connection's pipe into the file at `offset`: ``write(_:at:proven:url:)``
    /// for bytes that never entered user space (a file only: ``BodyReceivePath`` says when).
    func write(piped: PipedBytes, count: Int, at offset: Int64) throws(HaulError) {
        guard offset >= 0, offset + Int64(count) <= bound ?? Int64.max, kind == .file, let file else {
            throw .unexpected("refusing to splice \(count) bytes at \(offset) of a \(bound ?? -1)-byte file")
        }
        do { try piped.move(count, into: file.fileDescriptor, at: offset) } catch { throw .disk(path: label, error) }
    }

    /// ``write(piped:count:at:)`` on a writer thread (``PipedBytes/handOff(_:into:keeping:at:tracking:completion:)``):
    /// returns at once; `completion` runs on the loop once the bytes are in the file, with the failure as the
    /// synchronous write would have thrown it. The file stays open until the write has returned.
    func handOff(piped: PipedBytes, count: Int, at offset: Int64, completion: @escaping (HaulError?) -> Void) throws(HaulError) {
        guard offset >= 0, offset + Int64(count) <= bound ?? Int64.max, kind == .file, let file else {
            throw .unexpected("refusing to splice \(count) bytes at \(offset) of a \(bound ?? -1)-byte file")
        }
        guard !handOffsClosed else {
            throw .unexpected("refusing to hand off \(count) bytes at \(offset) after the download's end")
        }
        let tracking = handOffs ?? WritesInFlight(beforeEachWrite: beforeEachHandedOffWrite)
        handOffs = tracking
        let label = label
        piped.handOff(count, into: file.fileDescriptor, keeping: file, at: offset, tracking: tracking) { result in
            completion(result.error.map { .disk(path: label, $0) })
        }
    }

    /// Whether a write handed off has not returned yet.
    var hasHandOffsUnderway: Bool { handOffs.map { !$0.isEmpty } ?? false }

    /// Runs `action` on `loop` once every write handed off so far has returned: at once when none is under
    /// way, else from the last one's return (``WritesInFlight/whenAllReturned(on:_:)``). Never waits.
    func afterHandedOffWrites(on loop: EventLoop, _ action: @escaping () -> Void) {
        guard let handOffs else { return action() }
        handOffs.whenAllReturned(on: loop, action)
    }

    /// No more hand-offs: the download has ended (its end came after every write handed off before).
    func closeHandOffs() {
        handOffsClosed = true
    }

    /// Starts write-back of `start..<end` off the loop; a failure surfaces at the next sync of the file.
    func startWriteBack(from start: Int64, to end: Int64) {
        // Memory has no disk to write back to: a thread woken for nothing.
        guard kind == .file else { return }
        // A file smaller than one write-back step is written back by its commit, with the rest of its batch
        // (``GroupCommit``): starting it here cost a thread hop and a `sync_file_range` per small file.
        guard bound.map({ $0 >= SegmentWorker.writeBackStep }) ?? true else { return }
        file?.writeBackInBackground(offset: start, length: end - start)
    }

    /// Delivers a stream's provisional bytes of `range`, proven now.
    func commit(_ range: Range<Int64>) throws(HaulError) {
        guard let stream else { return }
        do { try stream.commit(range) } catch { throw Self.streamError(error) }
    }

    /// Drops a stream's provisional bytes of `range` (their exchange failed).
    func discardUnproven(in range: Range<Int64>) {
        stream?.discardUnproven(in: range)
    }

    /// How far the output holds the file: the stream's delivered bytes, or the file's size.
    func size() throws(HaulError) -> Int64 {
        if let stream { return stream.delivered }
        // The driver sizes the file only after the writes (``HandedOffWriteOrder/Step/checkOutput``).
        guard !hasHandOffsUnderway else {
            throw .unexpected("\(label) sized while spliced bytes handed to a writer are still being written into it")
        }
        guard let file else { throw .unexpected("\(label) is not open") }
        do { return try file.size() } catch { throw .disk(path: label, error) }
    }

    private static func streamError(_ error: SystemError) -> HaulError {
        error.errno == EPIPE ? .outputClosed : .disk(path: "the output stream", error)
    }
}
