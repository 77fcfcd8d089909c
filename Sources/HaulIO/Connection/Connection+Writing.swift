extension Connection {
    // MARK: Loop-thread API

    /// Writes all of `bytes`, across as many partial writes as the socket needs, then calls `completion` on the
    /// loop thread with `nil` or the failure. Loop thread only; one write at a time.
    public func writeOnLoop(_ bytes: [UInt8], completion: @escaping (ConnectionError?) -> Void) {
        precondition(loop.inEventLoop, "Connection.writeOnLoop must be called on the loop thread")
        precondition(writer == nil, "Connection to \(host):\(port) already has a write in progress")
        if isTerminated, let terminalError {
            completion(terminalError)
            return
        }
        guard !bytes.isEmpty else {
            completion(nil)
            return
        }
        let wasIdle = !hasPendingOperation
        writer = PendingWrite(bytes: bytes, offset: 0, completion: completion)
        armIdleTimer(operationWasIdle: wasIdle)
        performWrites()
        updateInterest()
    }

    // MARK: Async API

    /// Writes all of `bytes`. Cancelling the task closes the connection.
    public func write(_ bytes: [UInt8]) async throws(ConnectionError) {
        let failure: ConnectionError? = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                loop.execute { self.writeOnLoop(bytes) { continuation.resume(returning: $0) } }
            }
        } onCancel: {
            close()
        }
        if let failure { throw failure }
    }

    // MARK: Machinery

    func performWrites() {
        while !isTerminated, var pending = writer {
            let attempt = pending.bytes.withUnsafeBytes { all in
                Result { () throws(ConnectionError) in
                    try writeOnce(from: UnsafeRawBufferPointer(rebasing: all[pending.offset...]))
                }
            }
            let written: Int
            switch attempt {
            case .success(let count?): written = count
            case .success(nil): return
            case .failure(let error):
                fail(error)
                return
            }
            noteProgress()
            pending.offset += written
            if pending.offset == pending.bytes.count {
                writer = nil
                pending.completion(nil)
                return
            }
            writer = pending
        }
    }

    /// One write attempt: the count written, or `nil` if the socket (or TLS) must become ready first.
    @inline(__always)
    private func writeOnce(from buffer: UnsafeRawBufferPointer) throws(ConnectionError) -> Int? {
        if let tls {
            switch try tls.write(from: buffer) {
            case .done(let count):
                writeNeedsReadable = false
                return count
            case .wantWrite:
                writeNeedsReadable = false
                return nil
            case .wantRead:
                writeNeedsReadable = true
                return nil
            }
        }
        do {
            switch try socket.write(from: buffer) {
            case .processed(let count): return count
            case .wouldBlock: return nil
            }
        } catch {
            throw ConnectionError(kind: .ioFailure, host: host, port: port, systemError: error)
        }
    }
}
