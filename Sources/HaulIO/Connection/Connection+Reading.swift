import Glibc
import SystemPackage

extension Connection {
    /// The most reads handled per wake-up before yielding to other connections on the loop.
    static let readsPerWakeUp = 16

    enum RawRead {
        case bytes(Int)
        case endOfStream(EndOfStream)
        case wouldBlock
    }

    // MARK: Loop-thread API

    /// Starts the hot read loop: `handler` runs on the loop thread with every chunk read, lent from the
    /// loop's receive buffer (shared by its connections and reused for every read, so nothing is allocated per
    /// read). The bytes are valid only during the call.
    ///
    /// Reading continues until the handler returns ``ReadDecision/stop``, the stream ends, or the connection fails;
    /// the handler sees ``ConnectionReadEvent/endOfStream(_:)`` or ``ConnectionReadEvent/failed(_:)`` last.
    /// Call again to resume, or to replace the handler (also from inside the current handler, e.g. when one
    /// response ends and the next begins). Loop thread only; one reader at a time.
    public func startReadingOnLoop(_ handler: @escaping (ConnectionReadEvent) -> ReadDecision) {
        startReadingOnLoop(splicing: nil, handler)
    }

    /// ``startReadingOnLoop(_:)`` that may splice: before each read, `splice` (if given) says how many bytes
    /// the handler takes through a pipe rather than the receive buffer. A positive answer, on a plain TCP
    /// connection, makes that read a `splice` of at most that many bytes (and at most the pipe's capacity)
    /// from the socket into the connection's pipe, handed to the handler as ``ConnectionReadEvent/piped(_:)``;
    /// 0 (and any TLS connection) reads as usual. Bytes a handler leaves in the pipe are discarded with the
    /// pipe when it returns, so they can never be written later at a wrong offset.
    public func startReadingOnLoop(splicing splice: (() -> Int64)?,
                                   _ handler: @escaping (ConnectionReadEvent) -> ReadDecision) {
        startReadingOnLoop(splicing: splice, readsNow: true, handler)
    }

    /// ``startReadingOnLoop(splicing:_:)`` that, with `readsNow` false, leaves the first read to the socket's
    /// readiness: for a reader that knows nothing can have arrived yet, such as one waiting for the response to
    /// a request it has only just written, whose immediate read would find the socket empty. Bytes OpenSSL
    /// already holds, which epoll cannot see, are read at once all the same.
    func startReadingOnLoop(splicing splice: (() -> Int64)?, readsNow: Bool,
                            _ handler: @escaping (ConnectionReadEvent) -> ReadDecision) {
        precondition(loop.inEventLoop, "Connection.startReadingOnLoop must be called on the loop thread")
        if isTerminated, let terminalError {
            _ = handler(.failed(terminalError))
            return
        }
        let wasIdle = !hasPendingOperation
        if case .handler = reader { setReader(.idle) }
        setReader(.handler(handler, splice: tls == nil ? splice : nil))
        armIdleTimer(operationWasIdle: wasIdle)
        if readsNow || tls?.hasBufferedData == true {
            readSoon()
        } else {
            updateInterest()
        }
    }

    /// Reads once into `buffer` (decrypting straight into it for TLS) and calls `completion` on the loop thread.
    /// `buffer` must stay valid until then. Loop thread only; one reader at a time.
    public func readOnLoop(
        into buffer: UnsafeMutableRawBufferPointer,
        completion: @escaping (Result<ReadResult, ConnectionError>) -> Void
    ) {
        precondition(loop.inEventLoop, "Connection.readOnLoop must be called on the loop thread")
        precondition(buffer.count > 0, "Connection.readOnLoop needs a non-empty buffer")
        if isTerminated, let terminalError {
            completion(.failure(terminalError))
            return
        }
        let wasIdle = !hasPendingOperation
        setReader(.into(buffer, completion))
        armIdleTimer(operationWasIdle: wasIdle)
        readSoon()
    }

    // MARK: Async API

    /// Reads at least one byte into `buffer`, or reports the end of the stream. Zero-copy: the kernel (or
    /// OpenSSL) writes directly into `buffer`, which must stay valid until this returns.
    public func read(into buffer: UnsafeMutableRawBufferPointer) async throws(ConnectionError) -> ReadResult {
        let target = LentBuffer(buffer: buffer)
        let result: Result<ReadResult, ConnectionError> = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                loop.execute { self.readOnLoop(into: target.buffer) { continuation.resume(returning: $0) } }
            }
        } onCancel: {
            close()
        }
        return try result.get()
    }

    /// Runs `body` on the loop thread for each chunk received, until it returns ``ReadDecision/stop`` or the
    /// stream ends; suspends the calling task once for the whole loop rather than once per read.
    ///
    /// `body` gets a view of the connection's receive buffer that is only valid during the call. An error thrown
    /// by `body` stops reading and is rethrown here; connection failures are thrown as ``ConnectionError``.
    /// Cancelling the task closes the connection.
    public func readLoop(_ body: @escaping @Sendable (UnsafeRawBufferPointer) throws -> ReadDecision) async throws -> ReadLoopEnd {
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                loop.execute {
                    self.startReadingOnLoop { event in
                        switch event {
                        case .bytes(let bytes):
                            do {
                                let decision = try body(bytes)
                                if decision == .stop { continuation.resume(returning: .stopped) }
                                return decision
                            } catch {
                                continuation.resume(throwing: error)
                                return .stop
                            }
                        case .endOfStream(let end):
                            continuation.resume(returning: .endOfStream(end))
                            return .stop
                        case .failed(let error):
                            continuation.resume(throwing: error)
                            return .stop
                        case .piped:
                            preconditionFailure("readLoop never asks for spliced bytes")
                        }
                    }
                }
            }
        } onCancel: {
            close()
        }
    }

    // MARK: Machinery

    /// Tries the new reader at once, since data may already be waiting in the socket or inside OpenSSL where
    /// epoll cannot see it; from inside this connection's handler, defers that to a fresh loop task instead
    /// (`performReads` itself defers a read that would need the receive buffer another handler holds).
    private func readSoon() {
        if isPerformingReads {
            performReadsOnNextTurn()
        } else {
            performReads()
        }
        updateInterest()
    }

    /// Reads from a fresh loop task, unless the reader has changed by then.
    private func performReadsOnNextTurn() {
        let generation = readerGeneration
        loop.execute { [self] in
            guard readerGeneration == generation else { return }
            performReads()
            updateInterest()
        }
    }

    func setReader(_ newReader: Reader) {
        if case .idle = reader {} else if case .idle = newReader {} else {
            preconditionFailure("Connection to \(host):\(port) already has a read in progress")
        }
        reader = newReader
        readerGeneration &+= 1
    }

    /// Serves the current reader until the socket is drained, the reader stops, or the per-wake-up budget is spent.
    func performReads() {
        guard !isPerformingReads else { return }
        isPerformingReads = true
        defer { isPerformingReads = false }
        let generation = readerGeneration
        for _ in 0..<Connection.readsPerWakeUp {
            guard !isTerminated, readerGeneration == generation else { return }
            do {
                switch reader {
                case .idle:
                    return
                case .into(let buffer, let completion):
                    switch try readOnce(into: buffer) {
                    case .wouldBlock:
                        return
                    case .bytes(let count):
                        noteProgress()
                        latestReadDrainedSocket = tls == nil && count < buffer.count
                        latestReadWaitCount = loop.completedWaits
                        setReader(.idle)
                        completion(.success(.bytes(count)))
                    case .endOfStream(let end):
                        peerFinished = true
                        setReader(.idle)
                        completion(.success(.endOfStream(end)))
                    }
                    return
                case .handler(let handler, let splice):
                    if let splice, !spliceUnavailable {
                        let limit = splice()
                        if limit > 0, let pipe = pipeForSplicing() {
                            let asked = Int(min(limit, Int64(pipe.pipe.capacity)))
                            switch try spliceOnce(into: pipe, count: asked) {
                            case .wouldBlock:
                                return
                            case .bytes(let count):
                                noteProgress()
                                latestReadDrainedSocket = false
                                let decision = handler(.piped(PipedBytes(pipe: pipe, count: count, loop: loop)))
                                // Bytes left behind belong to no offset any more: they go with the pipe. (A
                                // pipe handed to a writer thread is the writer's until it returns; the
                                // handler has stopped the reader meanwhile.)
                                if pipe.pending > 0, !pipe.isHandedOff, bodyPipe === pipe { bodyPipe = nil }
                                if pipe.fileRefusesSplice { spliceUnavailable = true }
                                if decision == .stop && readerGeneration == generation { setReader(.idle) }
                                // A short splice took what the socket held. Back to epoll rather than
                                // splicing again: the next splice would mostly find the socket empty (an
                                // EAGAIN per wake-up), and the loop's other connections get their turn a
                                // pipe at a time instead of after this one's 16 (docs/benchmarks.md, "Fewer
                                // splices per wake-up, fewer requests"). Epoll is level-triggered: bytes
                                // that arrived meanwhile are reported at once.
                                if count < asked { return }
                                continue
                            case .endOfStream(let end):
                                peerFinished = true
                                setReader(.idle)
                                _ = handler(.endOfStream(end))
                                return
                            }
                        }
                    }
                    guard !loop.isLendingReceiveBuffer else {
                        performReadsOnNextTurn()
                        return
                    }
                    let size = max(options.receiveBufferSize, 4096)
                    let readMore = try loop.withReceiveBuffer(size: size) { buffer throws(ConnectionError) -> Bool in
                        switch try readOnce(into: buffer) {
                        case .wouldBlock:
                            return false
                        case .bytes(let count):
                            noteProgress()
                            latestReadDrainedSocket = tls == nil && count < buffer.count
                            latestReadWaitCount = loop.completedWaits
                            let bytes = UnsafeRawBufferPointer(rebasing: buffer[..<count])
                            if handler(.bytes(bytes)) == .stop && readerGeneration == generation {
                                setReader(.idle)
                            }
                            return true
                        case .endOfStream(let end):
                            peerFinished = true
                            setReader(.idle)
                            _ = handler(.endOfStream(end))
                            return false
                        }
                    }
                    guard readMore else { return }
                }
            } catch {
                fail(error)
                return
            }
        }
        // Budget spent. Plain sockets will be reported again (level-triggered), but bytes OpenSSL already holds
        // would be stranded, so schedule another round explicitly.
        if readerGeneration == generation, tls?.hasBufferedData == true {
            performReadsOnNextTurn()
        }
    }

    /// The connection's pipe, made on first use; nil (and reading from then on) when none can be made.
    private func pipeForSplicing() -> BodyPipe? {
        if let bodyPipe {
            // A file refused a splice from it while a writer thread had it (``PipedBytes/handOff``).
            if bodyPipe.fileRefusesSplice {
                spliceUnavailable = true
                return nil
            }
            if bodyPipe.pending == 0, !bodyPipe.isHandedOff { return bodyPipe }
            // Bytes a failed hand-off left in it (or a pipe still out, which a reader never meets): a new
            // pipe, so that no byte is ever written at another read's offset.
            self.bodyPipe = nil
        }
        do {
            let pipe = try BodyPipe(size: options.splicePipeSize)
            bodyPipe = pipe
            return pipe
        } catch {
            spliceUnavailable = true
            return nil
        }
    }

    /// One `splice` of at most `count` bytes (at most the pipe's capacity) from the socket into the (empty) pipe.
    private func spliceOnce(into pipe: BodyPipe, count: Int) throws(ConnectionError) -> RawRead {
        do {
            switch try socket.fileDescriptor.splice(toPipe: pipe.pipe.writeEnd.descriptor, count: count) {
            case .processed(0): return .endOfStream(.clean)
            case .processed(let moved):
                pipe.pending = moved
                return .bytes(moved)
            case .wouldBlock: return .wouldBlock
            }
        } catch {
            throw ConnectionError(kind: .ioFailure, host: host, port: port, systemError: error)
        }
    }

    @inline(__always)
    private func readOnce(into buffer: UnsafeMutableRawBufferPointer) throws(ConnectionError) -> RawRead {
        if let tls {
            switch try tls.read(into: buffer) {
            case .bytes(let count):
                readNeedsWritable = false
                return .bytes(count)
            case .wantRead:
                readNeedsWritable = false
                return .wouldBlock
            case .wantWrite:
                readNeedsWritable = true
                return .wouldBlock
            case .closed(let clean):
                return .endOfStream(clean ? .clean : .withoutCloseNotify)
            }
        }
        do {
            switch try socket.read(into: buffer) {
            case .processed(0): return .endOfStream(.clean)
            case .processed(let count): return .bytes(count)
            case .wouldBlock: return .wouldBlock
            }
        } catch {
            throw ConnectionError(kind: .ioFailure, host: host, port: port, systemError: error)
        }
    }
}

/// A caller's buffer handed to the loop thread. @unchecked Sendable: the async caller stays suspended until the
/// loop has finished with the buffer, so exactly one thread uses the memory at any time.
struct LentBuffer: @unchecked Sendable {
    let buffer: UnsafeMutableRawBufferPointer
}

/// A connection's splice pipe and how many spliced bytes wait in it.
final class BodyPipe {
    let pipe: SplicePipe
    /// Bytes spliced in and not yet moved out.
    var pending = 0
    /// A file refused a splice from this pipe (``PipedBytes/move(_:into:at:)``): the connection stops splicing.
    var fileRefusesSplice = false
    /// Handed to a writer thread (``PipedBytes/handOff(_:into:keeping:at:tracking:completion:)``) until its
    /// completion runs on the loop: nothing is spliced into it meanwhile.
    var isHandedOff = false

    init(size: Int) throws(SystemError) {
        pipe = try SplicePipe(size: size)
    }
}

/// Body bytes waiting in a connection's pipe (``ConnectionReadEvent/piped(_:)``): move them into a file before
/// the handler returns; what is left is discarded.
public struct PipedBytes {
    let pipe: BodyPipe
    /// How many bytes were spliced in this read.
    public let count: Int
    /// The connection's loop, where a hand-off's completion runs.
    let loop: EventLoop

    /// Moves the next `count` waiting bytes into `file` at `offset` without copying them through user space.
    /// After a failure the rest of the pipe is discarded when the handler returns.
    ///
    /// A file that refuses `splice` (`EINVAL`: a file system without splice support, a file opened for
    /// appending) gets the bytes read out of the pipe and written with `pwrite` instead, and the connection
    /// reads rather than splices from then on.
    public func move(_ count: Int, into file: FileDescriptor, at offset: Int64) throws(SystemError) {
        precondition(count >= 0 && count <= pipe.pending, "moving \(count) of \(pipe.pending) piped bytes")
        guard count > 0 else { return }
        var done = 0
        do {
            try pipe.pipe.readEnd.descriptor.spliceAll(count, into: file, at: offset, moved: &done)
        } catch where error.errno == EINVAL {
            pipe.fileRefusesSplice = true
            try copyOut(count - done, into: file, at: offset + Int64(done))
        }
        pipe.pending -= count
    }

    /// Reads `count` bytes out of the pipe and writes them into `file` at `offset`.
    private func copyOut(_ count: Int, into file: FileDescriptor, at offset: Int64) throws(SystemError) {
        try Self.copyOut(count, from: pipe.pipe.readEnd.descriptor, into: file, at: offset)
    }

    /// Reads `count` bytes out of the pipe `source` (its read end) and writes them into `file` at `offset`.
    static func copyOut(_ count: Int, from source: FileDescriptor, into file: FileDescriptor, at offset: Int64) throws(SystemError) {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: count, alignment: 16)
        defer { buffer.deallocate() }
        var filled = 0
        while filled < count {
            let target = UnsafeMutableRawBufferPointer(rebasing: buffer[filled...])
            switch try source.readAvailable(into: target) {
            case .processed(let read) where read > 0: filled += read
            // Bytes known to be in the pipe cannot run out.
            case .processed, .wouldBlock: throw SystemError(call: "read", errno: EIO)
            }
        }
        try file.writeAll(UnsafeRawBufferPointer(buffer), at: offset)
    }
}
