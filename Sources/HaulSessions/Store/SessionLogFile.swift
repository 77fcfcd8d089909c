import Glibc
import Haul
import HaulIO
import SystemPackage

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
    /// The log, open for reading and writing; closed with this object.
    private let file: OwnedFileDescriptor
    /// Where the next record goes (the end of the last valid record).
    private(set) var end: Int
    /// Set when a sync failed: what the disk holds is then unknown, and nothing more is written.
    private(set) var failure: SessionError?

    private init(path: String, file: consuming OwnedFileDescriptor, end: Int) {
        self.path = path
        self.file = file
        self.end = end
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
        let file = try SessionError.at(path) { () throws(SystemError) in try FileDescriptor.openingSessionFile(path, .readWrite) }
        let bytes = try SessionError.at(path) { () throws(SystemError) in try readAll(file.descriptor) }
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
            do {
                try systemCall("ftruncate") { try file.descriptor.resize(to: Int64(scan.validEnd)) }
                try file.descriptor.synchronizeData()
            } catch {
                throw .io(path: path, error)
            }
        }
        return Opened(file: SessionLogFile(path: path, file: file, end: scan.validEnd), state: state,
                      tornTail: scan.tornTail, created: created)
    }

    /// Reads the log at `path` without changing it (for tests and tools): the state, and a torn tail if any.
    static func read(path: String) throws(SessionError) -> (state: SessionState, tornTail: String?) {
        let bytes: [UInt8]
        do { bytes = try SmallFile.readBytes(path) } catch { throw .io(path: path, error) }
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
        let fd = file.descriptor
        do { try fd.writeAll(bytes, at: start) } catch let writeFailure {
            // Nothing of these records counts: cut back whatever part of them landed.
            do { try systemCall("ftruncate") { try fd.resize(to: Int64(start)) } } catch { failure = .io(path: path, error) }
            throw .io(path: path, writeFailure)
        }
        do { try fd.synchronizeData() } catch {
            failure = .io(path: path, error)
            throw .io(path: path, error)
        }
        end = start + bytes.count
    }

    /// Writes a log holding only the header: to `path.tmp`, synced, renamed, the directory synced.
    private static func createEmpty(path: String) throws(SessionError) {
        let temporary = path + ".tmp"
        do throws(SystemError) {
            try OutputFile.remove(temporary)
            let file = try FileDescriptor.openingSessionFile(temporary, .readWrite, options: [.create, .exclusiveCreate], permissions: [.ownerReadWrite])
            do throws(SystemError) {
                try file.descriptor.writeAll(SessionLogCodec.header(), at: 0)
                try file.descriptor.synchronizeData()
            } catch {
                try? OutputFile.remove(temporary)  // the write's error is the one to report
                throw error
            }
        } catch {
            throw .io(path: temporary, error)
        }
        do { try OutputFile.rename(temporary, to: path) } catch { throw .io(path: path, error) }
        do { try OutputFile.synchronizeDirectory(containing: path) } catch { throw .io(path: path, error) }
    }

    /// The whole file, read from offset 0 to the end.
    private static func readAll(_ fd: FileDescriptor) throws(SystemError) -> [UInt8] {
        var bytes = [UInt8](repeating: 0, count: Int(try fd.status().size))
        let outcome = bytes.withUnsafeMutableBytes { raw in Result { () throws(SystemError) in try fd.readAll(into: raw, at: 0) } }
        return Array(bytes[0..<(try outcome.get())])
    }
}
