import Glibc
import Haul
import HaulIO

/// The session log on disk (`session.haul`): read whole at start, then appended to, each append synced
/// (`fdatasync`) before it returns — so whatever a caller acknowledges after ``append(_:firstNumber:)`` is
/// on disk, and a crash at any moment leaves either the whole record or a torn tail that the next
/// ``open(path:)`` cuts off.
///
/// One writer at a time: the daemon, which holds the session directory's lock. Not thread-safe; the daemon
/// calls it from its loop thread only.
final class SessionLogFile: @unchecked Sendable {
    // @unchecked Sendable: used by one thread at a time (opened off the loop, then used on the loop only).
    let path: String
    private let fileDescriptor: Int32
    /// Where the next record goes (the end of the last valid record).
    private(set) var end: Int
    /// Set when a sync failed: what the disk holds is then unknown, and nothing more is written.
    private(set) var failure: SessionError?

    private init(path: String, fileDescriptor: Int32, end: Int) {
        self.path = path
        self.fileDescriptor = fileDescriptor
        self.end = end
    }

    deinit {
        _ = Glibc.close(fileDescriptor)
    }

    /// What opening found.
    struct Opened: Sendable {
        var file: SessionLogFile
        var state: SessionState
        /// Why bytes at the end were cut off (a torn append), if any were.
        var tornTail: String?
        /// Whether the file was created by this call.
        var created: Bool
    }

    /// Opens the log at `path`, creating an empty one when there is none, and replays it.
    ///
    /// A torn tail (an append a crash cut short) is cut off and the truncation synced. Anything else wrong —
    /// a damaged record followed by valid ones, a record that does not decode, a record that does not
    /// follow from the ones before — throws ``SessionError/corruptState(path:offset:reason:)``; nothing of
    /// such a log is used.
    static func open(path: String) throws(SessionError) -> Opened {
        var created = false
        if !OutputFile.exists(path) {
            try createEmpty(path: path)
            created = true
        }
        let fd = Glibc.open(path, O_RDWR | O_CLOEXEC | O_NOFOLLOW)
        guard fd >= 0 else { throw .io(path: path, SystemError(call: "open", errno: errno)) }
        var keep = false
        defer { if !keep { _ = Glibc.close(fd) } }
        let bytes = try readAll(fd, path: path)
        let scan: SessionLogCodec.Scan
        do {
            scan = try SessionLogCodec.scan(bytes)
        } catch {
            if error.isUnsupported { throw .unsupportedFormat(path: path, reason: error.reason) }
            throw .corruptState(path: path, offset: error.offset, reason: error.reason)
        }
        var state = SessionState()
        for record in scan.records {
            let decoded: LogRecord
            do {
                decoded = try LogRecord(payload: record.payload)
            } catch {
                throw .corruptState(path: path, offset: record.offset + 16, reason: "record \(record.number): \(error)")
            }
            do {
                try state.apply(decoded)
            } catch {
                throw .corruptState(path: path, offset: record.offset, reason: "record \(record.number): \(error)")
            }
        }
        if scan.tornTail != nil {
            guard ftruncate(fd, off_t(scan.validEnd)) == 0 else { throw .io(path: path, SystemError(call: "ftruncate", errno: errno)) }
            guard fdatasync(fd) == 0 else { throw .io(path: path, SystemError(call: "fdatasync", errno: errno)) }
        }
        keep = true
        return Opened(file: SessionLogFile(path: path, fileDescriptor: fd, end: scan.validEnd), state: state,
                      tornTail: scan.tornTail, created: created)
    }

    /// Reads the log at `path` without changing it (for tests and tools): the state, and a torn tail if any.
    static func read(path: String) throws(SessionError) -> (state: SessionState, tornTail: String?) {
        guard let bytes = SmallFile.readBytes(path) else { throw .io(path: path, SystemError(call: "open", errno: errno)) }
        let scan: SessionLogCodec.Scan
        do { scan = try SessionLogCodec.scan(bytes) } catch {
            if error.isUnsupported { throw .unsupportedFormat(path: path, reason: error.reason) }
            throw .corruptState(path: path, offset: error.offset, reason: error.reason)
        }
        var state = SessionState()
        for record in scan.records {
            do {
                try state.apply(try LogRecord(payload: record.payload))
            } catch {
                throw .corruptState(path: path, offset: record.offset, reason: "record \(record.number): \(error)")
            }
        }
        return (state, scan.tornTail)
    }

    /// Appends `records`, numbered from `firstNumber`, in one write, and syncs. When this returns they are
    /// durable. On a failed write the file is cut back to where it was (the records are not in the log);
    /// on a failed sync the log is unusable from then on (``failure``), because what reached the disk is
    /// unknown.
    func append(_ records: [LogRecord], firstNumber: UInt64) throws(SessionError) {
        if let failure { throw failure }
        var bytes: [UInt8] = []
        for (index, record) in records.enumerated() {
            let payload = record.payload
            // A record the reader would refuse is never written.
            guard payload.count <= SessionLogCodec.maximumPayload else { throw .io(path: path, SystemError(call: "append", errno: EFBIG)) }
            bytes += SessionLogCodec.record(number: firstNumber + UInt64(index), payload: payload)
        }
        let start = end
        let fd = fileDescriptor
        let writeFailure: SystemError? = bytes.withUnsafeBytes { raw in
            var written = 0
            while written < raw.count {
                do throws(SystemError) { written += try blockingSyscall("pwrite") { pwrite(fd, raw.baseAddress! + written, raw.count - written, off_t(start + written)) } }
                catch { return error }
            }
            return nil
        }
        if let writeFailure {
            // Nothing of these records counts: cut back whatever part of them landed.
            do { _ = try blockingSyscall("ftruncate") { ftruncate(fd, off_t(start)) } } catch { failure = .io(path: path, error) }
            throw .io(path: path, writeFailure)
        }
        do { _ = try blockingSyscall("fdatasync") { fdatasync(fd) } } catch {
            failure = .io(path: path, error)
            throw .io(path: path, error)
        }
        end = start + bytes.count
    }

    /// Writes a log holding only the header: to `path.tmp`, synced, renamed, the directory synced.
    private static func createEmpty(path: String) throws(SessionError) {
        let temporary = path + ".tmp"
        _ = unlink(temporary)
        let fd = Glibc.open(temporary, O_RDWR | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw .io(path: temporary, SystemError(call: "open", errno: errno)) }
        let header = SessionLogCodec.header()
        let count = header.withUnsafeBytes { pwrite(fd, $0.baseAddress, $0.count, 0) }
        let synced = count == header.count && fdatasync(fd) == 0
        let code = errno
        _ = Glibc.close(fd)
        guard synced else {
            _ = unlink(temporary)
            throw .io(path: temporary, SystemError(call: count == header.count ? "fdatasync" : "pwrite", errno: code))
        }
        guard rename(temporary, path) == 0 else { throw .io(path: path, SystemError(call: "rename", errno: errno)) }
        do { try OutputFile.synchronizeDirectory(containing: path) } catch { throw .io(path: path, error) }
    }

    private static func readAll(_ fd: Int32, path: String) throws(SessionError) -> [UInt8] {
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw .io(path: path, SystemError(call: "fstat", errno: errno)) }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var done = 0
        while done < bytes.count {
            let outcome = bytes.withUnsafeMutableBytes { raw in
                Result { () throws(SystemError) in try blockingSyscall("pread") { pread(fd, raw.baseAddress! + done, raw.count - done, off_t(done)) } }
            }
            let count: Int
            switch outcome {
            case .success(let value): count = value
            case .failure(let error): throw .io(path: path, error)
            }
            if count == 0 { break }
            done += count
        }
        return Array(bytes[0..<done])
    }
}
