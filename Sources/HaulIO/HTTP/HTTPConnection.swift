import HaulHTTP

/// One HTTP/1.1 connection: a transport ``Connection`` and the response parser that reads it, running one
/// exchange at a time entirely on the event-loop thread.
///
/// The hot path never leaves the loop: each read lands in the connection's receive buffer, the parser
/// slices the body out of it and the handler writes that slice where it belongs.
public final class HTTPConnection: @unchecked Sendable {
    // @unchecked Sendable: every mutable property is touched only on `transport.loop` (each entry point
    // asserts `inEventLoop`); the references themselves never change.

    /// The transport.
    public let transport: Connection
    /// The origin this connection talks to (the pool key, with ``proxy``).
    public let origin: HTTPOrigin
    /// The proxy the connection goes through, if any.
    public var proxy: ProxyURL? { transport.proxyRoute?.proxy }
    /// Whether requests go to an HTTP proxy in absolute form (rather than through a tunnel or directly): then a
    /// `407` is the proxy's, and fails the exchange as a ``ConnectionError/Kind/proxyFailed`` error.
    let forwardsThroughProxy: Bool
    /// The settings it was made with, part of its pool key: it is reused only for requests with the same.
    public let identity: ConnectionIdentity
    /// Whether the latest exchange got as far as a response head; a reused connection that fails before
    /// one was most likely closed by the server while idle, and the request can be sent again.
    public private(set) var latestExchangeSawHead = false
    /// Where the pool keeps this connection when idle, and the pool's slot generation when that was found
    /// (loop thread only; the pool's own record, see `ConnectionPool.returnOnLoop`).
    var poolSlot: (index: Int?, generation: Int) = (nil, 0)

    private var parser = ResponseParser()
    // The current exchange, in three properties rather than one optional struct: reading the handler, storing
    // the head or taking the completion copied (retained and released) the whole exchange each time, several
    // times per response. `handler` is non-nil exactly while an exchange runs.
    private var handler: (any ResponseHandler)?
    private var completion: ((Result<ExchangeSummary, HTTPClientError>) -> Void)?
    /// The current exchange's final response head, once it arrived.
    private var head: ResponseHead?
    /// Bounds the wait for the final response head (``ConnectionTimeouts/head``), which the transport's idle
    /// timeout cannot: it is reset by every byte, however slowly they come. Re-armed lazily, as the transport's
    /// idle timer is: an exchange sets `headDeadline` and schedules the timer only when none is pending; a
    /// timer that fires before the current deadline schedules itself again for it. A timer scheduled and
    /// cancelled per exchange cost two heap operations for every small file. The pending timer holds the
    /// connection (strongly: a weak reference moved every retain and release of it to a side table), so
    /// whoever closes an idle connection does it through ``closeOnLoop()``, which cancels the timer too.
    private var headTimer: TimerID?
    /// When the current exchange's head is due; nil when no exchange waits for its head.
    private var headDeadline: MonotonicInstant?
    /// The limit ``headTimer`` enforces, kept here so that the timer's closure captures only `self`.
    private var headTimeLimit: Duration = .zero
    /// A finished exchange's completion and result, until the end of the loop's turn delivers them (see
    /// `finish`). Two properties, not an optional tuple: storing and clearing a tuple that holds a closure went
    /// through the runtime's generic value witnesses (metadata lookups) for every exchange.
    private var finishedCompletion: ((Result<ExchangeSummary, HTTPClientError>) -> Void)?
    private var finishedResult: Result<ExchangeSummary, HTTPClientError>?
    /// `parser.bytesConsumed` when the current exchange started: until the head is complete the parser takes
    /// every byte it is given, so a larger count means the server has sent something.
    private var exchangeStartOffset = 0
    /// Counts spliced reads and ended exchanges: a handler's write that returns after its exchange ended
    /// (``pipedWriteReturned(_:generation:)``) finds it changed and is ignored.
    private var handOffGeneration: UInt64 = 0

    init(transport: Connection, origin: HTTPOrigin, forwardsThroughProxy: Bool = false, identity: ConnectionIdentity = ConnectionIdentity()) {
        self.transport = transport
        self.origin = origin
        self.forwardsThroughProxy = forwardsThroughProxy
        self.identity = identity
    }

    /// Closes the transport and cancels the head timer that may still be pending from the last exchange.
    /// Loop thread only.
    func closeOnLoop() {
        precondition(transport.loop.inEventLoop, "HTTPConnection.closeOnLoop must be called on the loop thread")
        cancelHeadTimer(dropTimer: true)
        transport.closeOnLoop()
    }

    /// Whether the transport was closed (by us or by a failure).
    public var isClosedOnLoop: Bool { transport.isClosedOnLoop }

    /// Sends `request` and runs the response through `handler`; `completion` runs on the loop thread once.
    /// On success the summary says whether the connection may be reused; a failed or abandoned exchange
    /// closes the connection.
    public func exchangeOnLoop(
        request: [UInt8],
        requestWasHead: Bool,
        handler: any ResponseHandler,
        completion: @escaping (Result<ExchangeSummary, HTTPClientError>) -> Void
    ) {
        precondition(transport.loop.inEventLoop, "HTTPConnection.exchangeOnLoop must be called on the loop thread")
        precondition(self.handler == nil, "one exchange at a time per connection")
        self.handler = handler
        self.completion = completion
        head = nil
        latestExchangeSawHead = false
        parser.prepareForNextResponse(requestWasHead: requestWasHead)
        exchangeStartOffset = parser.bytesConsumed
        if let limit = transport.options.timeouts.effectiveHead {
            headTimeLimit = limit
            let deadline = MonotonicInstant.now().advanced(by: limit)
            headDeadline = deadline
            if headTimer == nil {
                headTimer = transport.loop.scheduleTimer(at: deadline) { [self] in headTimerFired() }
            }
        }
        transport.writeOnLoop(request) { [self] error in
            if let error { finish(.failure(.connection(error))) }
        }
        // The response cannot be there yet: the first read waits for the socket to become readable.
        startReading(readsNow: false)
    }

    private func startReading(readsNow: Bool = true) {
        transport.startReadingOnLoop(splicing: { [self] in bytesToSplice() }, readsNow: readsNow) { [self] event in
            switch event {
            case .bytes(let bytes): return consume(bytes)
            case .piped(let piped): return consumePiped(piped)
            case .endOfStream(let end):
                endOfStream(end)
                return .stop
            case .failed(let error):
                finish(.failure(.connection(error)))
                return .stop
            }
        }
    }

    private func pauseReading(for delay: Duration) {
        _ = transport.loop.scheduleTimer(after: delay) { [self] in
            guard handler != nil, !transport.isClosedOnLoop else { return }
            startReading()
        }
    }

    private func consume(_ bytes: UnsafeRawBufferPointer) -> ReadDecision {
        // The handler alone, not a copy of the whole exchange (its completion, its head's fields): the head
        // is stored in place below.
        guard let handler else { return .stop }
        var offset = 0
        do {
            while true {
                let (event, consumed) = try parser.parse(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                offset += consumed
                switch event {
                case .needMoreInput:
                    if let pause = handler.pauseBeforeNextRead() {
                        pauseReading(for: pause)
                        return .stop
                    }
                    return .continueReading
                case .interim:
                    continue
                case .head(let head):
                    cancelHeadTimer()
                    self.head = head
                    latestExchangeSawHead = true
                    if head.status == 407, forwardsThroughProxy, let route = transport.proxyRoute {
                        let reason: ProxyFailure.Reason = route.proxy.userInfo == nil
                            ? .authenticationRequired(status: 407) : .credentialsRejected(status: 407)
                        finish(.failure(.connection(ConnectionError(
                            proxyFailure: ProxyFailure(route: route, step: .forwardedRequest, reason: reason)))))
                        return .stop
                    }
                    if try handler.didReceiveHead(head) == .abandon {
                        finish(.success(summary(complete: false, trailers: HTTPFields(), reusable: false)))
                        return .stop
                    }
                case .body(let body):
                    if try handler.didReceiveBody(body) == .stop {
                        finish(.success(summary(complete: false, trailers: HTTPFields(), reusable: false)))
                        return .stop
                    }
                case .end(let trailers):
                    // Bytes after the response that nobody asked for mean the stream cannot be trusted.
                    let reusable = parser.connectionReusable && offset == bytes.count
                    finish(.success(summary(complete: true, trailers: trailers, reusable: reusable)))
                    return .stop
                }
            }
        } catch let error as HTTPParseError {
            finish(.failure(.malformedResponse(error, origin: origin, through: transport.proxyRoute)))
        } catch {
            finish(.failure(.handlerFailed(error)))
        }
        return .stop
    }

    /// How many of the body's next bytes may be spliced: the rest of a `Content-Length` body, as far as the
    /// handler takes it that way (the transport splices only on plain TCP).
    private func bytesToSplice() -> Int64 {
        // Asked before every read: the flag and the handler, rather than a copy of the whole exchange.
        guard latestExchangeSawHead, let remaining = parser.contentLengthRemaining, remaining > 0,
              let handler else { return 0 }
        return min(remaining, handler.bodyBytesToSplice())
    }

    /// Body bytes that went socket → pipe: counted by the parser as if parsed, handed to the handler to move
    /// into its file, and the response ended when they were its last. A handler that writes them on another
    /// thread resumes the exchange (``pipedWriteReturned(_:generation:)``) once they are written; the reader
    /// stays stopped until then.
    private func consumePiped(_ piped: PipedBytes) -> ReadDecision {
        guard let handler else { return .stop }
        parser.skipBody(piped.count)
        do {
            handOffGeneration &+= 1
            let generation = handOffGeneration
            let taken = try handler.didReceiveBody(piped: piped) { [self] result in
                pipedWriteReturned(result, generation: generation)
            }
            switch taken {
            case .now(let decision): return afterPiped(decision, handler: handler)
            case .later: return .stop
            }
        } catch {
            finish(.failure(.handlerFailed(error)))
        }
        return .stop
    }

    /// The exchange goes on after a handler's write on another thread returned — unless it ended meanwhile
    /// (a stale `generation`). A connection closed meanwhile (a cancel, the idle timeout) reports its failure
    /// as the read it stopped would have.
    private func pipedWriteReturned(_ result: Result<BodyDecision, any Error>, generation: UInt64) {
        guard let handler, generation == handOffGeneration else { return }
        if transport.isClosedOnLoop {
            startReading()
            return
        }
        switch result {
        case .failure(let error):
            finish(.failure(.handlerFailed(error)))
        case .success(let decision):
            if afterPiped(decision, handler: handler) == .continueReading { startReading() }
        }
    }

    /// What follows spliced bytes the handler has taken: the end of the exchange when it stopped or they were
    /// the body's last, a pause, or more reading.
    private func afterPiped(_ decision: BodyDecision, handler: any ResponseHandler) -> ReadDecision {
        do {
            if decision == .stop {
                finish(.success(summary(complete: false, trailers: HTTPFields(), reusable: false)))
                return .stop
            }
            if parser.contentLengthRemaining == nil {
                let (event, _) = try parser.parse(UnsafeRawBufferPointer(start: nil, count: 0))
                guard case .end(let trailers) = event else {
                    preconditionFailure("a Content-Length body's last byte was not followed by its end")
                }
                // Nothing past the body has been read; bytes the server sent after it stay in the socket,
                // where the pool's check before reuse finds them.
                finish(.success(summary(complete: true, trailers: trailers, reusable: parser.connectionReusable)))
                return .stop
            }
            if let pause = handler.pauseBeforeNextRead() {
                pauseReading(for: pause)
                return .stop
            }
            return .continueReading
        } catch {
            finish(.failure(.malformedResponse(error, origin: origin, through: transport.proxyRoute)))
        }
        return .stop
    }

    private func endOfStream(_ end: EndOfStream) {
        guard handler != nil else { return }
        do {
            guard let event = try parser.finish() else { return }
            guard case .end(let trailers) = event else { return }
            // Only close-delimited bodies end here; without close_notify their end is unproven.
            if end == .withoutCloseNotify && transport.tlsDetails != nil {
                finish(.failure(.truncatedTLSBody(origin: origin, bytesReceived: parser.bodyBytesDelivered, through: transport.proxyRoute)))
                return
            }
            finish(.success(summary(complete: true, trailers: trailers, reusable: false)))
        } catch {
            finish(.failure(.malformedResponse(error, origin: origin, through: transport.proxyRoute)))
        }
    }

    private func summary(complete: Bool, trailers: HTTPFields, reusable: Bool) -> ExchangeSummary {
        ExchangeSummary(head: head!, bodyBytes: parser.bodyBytesDelivered, complete: complete,
                        trailers: trailers, connectionReusable: reusable)
    }

    private func headTimerFired() {
        let limit = headTimeLimit
        headTimer = nil
        guard let deadline = headDeadline, handler != nil, head == nil else { return }
        // Scheduled for an earlier exchange's deadline: this one's is later.
        guard MonotonicInstant.now() >= deadline else {
            headTimer = transport.loop.scheduleTimer(at: deadline) { [self] in headTimerFired() }
            return
        }
        // A server silent since the request is a stall, which the transport's idle timeout names as one; when
        // that limit is no longer than this one, its verdict stands. Its deadline counts from the request's
        // last byte sent, so it may still be moments away.
        if parser.bytesConsumed == exchangeStartOffset, let idle = transport.options.timeouts.idle, idle <= limit {
            let stallDeadline = transport.lastProgress.advanced(by: idle)
            if MonotonicInstant.now() < stallDeadline {
                headTimer = transport.loop.scheduleTimer(at: stallDeadline) { [self] in headTimerFired() }
            } else {
                // The reader normally reports the failure; this covers one that is not installed right now.
                finish(.failure(.connection(transport.failStalled(idle))))
            }
            return
        }
        finish(.failure(.connection(ConnectionError(
            kind: .headTimedOut, host: transport.host, port: transport.port, detail: limit.compactDescription))))
    }

    /// The head arrived or the exchange ended: no deadline. The timer stays for the connection's next
    /// exchange, unless `dropTimer` (the connection is closing: nothing keeps it alive then).
    private func cancelHeadTimer(dropTimer: Bool = false) {
        headDeadline = nil
        guard dropTimer, let timer = headTimer else { return }
        transport.loop.cancelTimer(timer)
        headTimer = nil
    }

    private func finish(_ result: Result<ExchangeSummary, HTTPClientError>) {
        guard handler != nil, let completion else { return }
        handler = nil
        self.completion = nil
        head = nil
        handOffGeneration &+= 1
        let reusable = if case .success(let summary) = result { summary.connectionReusable } else { false }
        if reusable { cancelHeadTimer() } else { closeOnLoop() }
        // Usually we are inside the transport's read handler here. The caller will often start the next
        // request at once, which needs this connection idle (no reader installed), so the completion runs
        // once the handler has returned: at the end of the loop's turn (``EventLoop/runAfterThisTurn(_:)``,
        // which queues this connection itself, where a zero-delay timer cost a clock read, a heap entry and
        // a slot per exchange). A second exchange finished before the first was delivered (nothing does that:
        // the connection goes back to the pool in the completion) would wait in a timer's closure of its own.
        guard finishedCompletion == nil else {
            _ = transport.loop.scheduleTimer(after: .zero) { completion(result) }
            return
        }
        finishedCompletion = completion
        finishedResult = result
        transport.loop.runAfterThisTurn(self)
    }
}

extension HTTPConnection: LoopTurnWork {
    /// Delivers the finished exchange's result (see `finish`).
    func runAfterTurn() {
        guard let completion = finishedCompletion, let result = finishedResult.take() else { return }
        finishedCompletion = nil
        completion(result)
    }
}
