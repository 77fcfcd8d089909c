import HaulHTTP

/// What to do with a response's body once its head is known.
public enum HeadDecision: Sendable {
    /// Deliver the body to ``ResponseHandler/didReceiveBody(_:)``.
    case receiveBody
    /// Stop now and close the connection (for example a status the caller will not use).
    case abandon
}

/// Whether to keep receiving the body.
public enum BodyDecision: Sendable {
    case `continue`
    /// Stop now; the rest of the body is not read and the connection is closed.
    case stop
}

/// Receives one response on the event-loop thread.
///
/// Body bytes are lent straight from the connection's receive buffer (after TLS decryption and de-chunking),
/// valid only during the call: write them out (e.g. `pwrite`) rather than keeping them. Conformers are used
/// only on the loop thread, which is what makes them safe to hand over.
public protocol ResponseHandler: AnyObject, Sendable {
    /// The final response's head (interim 1xx responses are skipped). Throwing abandons the exchange.
    func didReceiveHead(_ head: ResponseHead) throws -> HeadDecision
    /// A piece of the body. Throwing abandons the exchange.
    func didReceiveBody(_ bytes: UnsafeRawBufferPointer) throws -> BodyDecision
    /// Asked after each read has been handled: a duration pauses reading for that long (TCP flow control then
    /// slows the sender), which is how a rate limit is kept without dropping bytes.
    func pauseBeforeNextRead() -> Duration?
    /// Asked before each read of a body framed by `Content-Length` on a plain TCP connection: how many of the
    /// body's next bytes the handler takes spliced (socket → pipe → file, never through user space) rather
    /// than through ``didReceiveBody(_:)``. 0, the default, reads them as usual. The connection splices no more
    /// than this, nor than the body's declared length, nor than its pipe holds.
    func bodyBytesToSplice() -> Int64
    /// Body bytes spliced into the connection's pipe, at most what ``bodyBytesToSplice()`` allowed: move them
    /// into the file (``PipedBytes/move(_:into:at:)``) before returning. They count as delivered body bytes
    /// like those of ``didReceiveBody(_:)``; any left in the pipe are discarded. Throwing abandons the exchange.
    func didReceiveBody(piped: PipedBytes) throws -> BodyDecision
    /// ``didReceiveBody(piped:)`` that may finish later: ``PipedBodyDecision/later`` means the handler handed
    /// the bytes to another thread (`PipedBytes.handOff`) and calls
    /// `resume` on the loop thread exactly once, after they are written (or their write failed: a failure
    /// abandons the exchange). Nothing is read from the connection until then. The default takes them at once.
    func didReceiveBody(piped: PipedBytes, resume: @escaping (Result<BodyDecision, any Error>) -> Void) throws -> PipedBodyDecision
}

/// What became of spliced body bytes (``ResponseHandler/didReceiveBody(piped:resume:)``).
public enum PipedBodyDecision: Sendable {
    /// Taken: the handler decided at once.
    case now(BodyDecision)
    /// Being written on another thread; the handler's `resume` says what to do next.
    case later
}

extension ResponseHandler {
    public func pauseBeforeNextRead() -> Duration? { nil }
    public func bodyBytesToSplice() -> Int64 { 0 }
    public func didReceiveBody(piped: PipedBytes) throws -> BodyDecision {
        preconditionFailure("\(Self.self) received spliced bytes it never asked for")
    }
    public func didReceiveBody(piped: PipedBytes, resume: @escaping (Result<BodyDecision, any Error>) -> Void) throws -> PipedBodyDecision {
        .now(try didReceiveBody(piped: piped))
    }
}

/// How an exchange ended when it did not fail.
public struct ExchangeSummary: Sendable {
    /// The final response's head.
    public var head: ResponseHead
    /// Body bytes delivered to the handler.
    public var bodyBytes: Int64
    /// Whether the whole body was received (false when the handler abandoned or stopped it).
    public var complete: Bool
    /// Chunked trailers, if any.
    public var trailers: HTTPFields
    /// Whether the connection can carry another request (the response was framed and complete, and
    /// neither side asked to close); the client then returns it to the pool.
    public var connectionReusable: Bool
}
