import HaulIO
import SystemPackage

/// Delivers a download's bytes to a stream (a pipe, standard output) in order, though connections write
/// them out of order: bytes at the delivery point go straight out, bytes ahead of it wait in memory.
///
/// What waits is bounded by the planner's horizon (nothing past `delivered + window` is ever requested), so
/// memory stays under `window` bytes whatever the file's size. Bytes of a response whose framing did not
/// promise its length are held back until the response has proven them (``commit(_:)``) — a stream cannot
/// take bytes back. Writes block: the stream's reader paces the download. Loop-confined.
final class OrderedStream: @unchecked Sendable {
    // @unchecked Sendable: touched on the download's event loop only.
    /// The stream, not owned: whoever passed it (the CLI's standard output, an embedder's pipe) closes it.
    let descriptor: FileDescriptor
    /// Everything before this offset is delivered.
    private(set) var delivered: Int64 = 0
    /// Bytes ahead of the delivery point, by offset; `proven` false until their response has ended well.
    private var waiting: [Int64: (bytes: [UInt8], proven: Bool)] = [:]
    /// Bytes held in `waiting`, and the most ever held (for the memory bound's tests).
    private(set) var waitingBytes = 0
    private(set) var peakWaitingBytes = 0

    init(descriptor: FileDescriptor) {
        self.descriptor = descriptor
    }

    /// Takes `bytes` for `offset`; `proven` false when their response has yet to prove them.
    func write(_ bytes: UnsafeRawBufferPointer, at offset: Int64, proven: Bool) throws(SystemError) {
        if proven, offset == delivered {
            try deliver(bytes)
            try deliverWaiting()
            return
        }
        waiting[offset] = (Array(bytes), proven)
        waitingBytes += bytes.count
        peakWaitingBytes = max(peakWaitingBytes, waitingBytes)
    }

    /// The response that wrote `range` proved its bytes.
    func commit(_ range: Range<Int64>) throws(SystemError) {
        for (offset, piece) in waiting where range.contains(offset) && !piece.proven {
            waiting[offset]!.proven = true
        }
        try deliverWaiting()
    }

    /// The response that wrote `range` turned out faulty: its unproven bytes are dropped (they will be
    /// fetched again).
    func discardUnproven(in range: Range<Int64>) {
        for (offset, piece) in waiting where range.contains(offset) && !piece.proven {
            waiting[offset] = nil
            waitingBytes -= piece.bytes.count
        }
    }

    private func deliverWaiting() throws(SystemError) {
        while let piece = waiting[delivered], piece.proven {
            waiting[delivered] = nil
            waitingBytes -= piece.bytes.count
            let failure = piece.bytes.withUnsafeBytes { raw -> SystemError? in
                do throws(SystemError) { try deliver(raw) } catch { return error }
                return nil
            }
            if let failure { throw failure }
        }
    }

    private func deliver(_ bytes: UnsafeRawBufferPointer) throws(SystemError) {
        try descriptor.writeAll(bytes)
        delivered += Int64(bytes.count)
    }
}
