/// A connection being established: Happy Eyeballs, then the TLS handshake if any. Cancel it to abandon it.
public final class ConnectAttempt: @unchecked Sendable {
    // @unchecked Sendable: every stored property is loop-confined. The async `connect` only moves the reference
    // into loop tasks, and `cancel` is only run on the loop.

    private let host: String
    private let port: UInt16
    private var completion: ((Result<Connection, ConnectionError>) -> Void)?
    private var connector: HappyEyeballsConnector?
    private var connection: Connection?
    private var cancelled = false
    /// Whether the attempt has completed (or been cancelled).
    private(set) var isFinished = false

    init(host: String, port: UInt16) {
        self.host = host
        self.port = port
    }

    func start(
        tls: TLSContext?,
        options: ConnectionOptions,
        on loop: EventLoop,
        completion: @escaping (Result<Connection, ConnectionError>) -> Void
    ) {
        // A task cancelled before it got here has already run `cancel`.
        guard !cancelled else {
            isFinished = true
            completion(.failure(cancellationError))
            return
        }
        self.completion = completion
        let newConnector = HappyEyeballsConnector(
            loop: loop, host: host, port: port, options: options.socket, attemptDelay: options.attemptDelay,
            timeout: options.timeouts.connect
        ) { [self] result in
            self.connector = nil
            switch result {
            case .failure(let error):
                finish(.failure(error))
            case .success(let socket):
                let connection = Connection(loop: loop, host: host, port: port, options: options, socket: socket)
                guard let tls else {
                    finish(.success(connection))
                    return
                }
                self.connection = connection
                connection.startHandshake(context: tls) { [self] outcome in
                    self.connection = nil
                    finish(outcome.map { connection })
                }
            }
        }
        connector = newConnector
        newConnector.start()
    }

    /// Abandons the attempt at once: closes the sockets of every connect attempt still racing, or the connected
    /// socket and its TLS state if the handshake is under way, and completes with a
    /// ``ConnectionError/Kind/closed`` error. Nothing of the attempt runs afterwards (no further connect, no
    /// handshake). Does nothing once the attempt has completed. Loop thread only.
    public func cancel() {
        cancelled = true
        guard let completion else { return }
        self.completion = nil
        isFinished = true
        connector?.cancel()
        connector = nil
        connection?.fail(cancellationError)
        connection = nil
        completion(.failure(cancellationError))
    }

    private var cancellationError: ConnectionError {
        ConnectionError(kind: .closed, host: host, port: port, detail: "connect cancelled")
    }

    private func finish(_ result: Result<Connection, ConnectionError>) {
        guard let completion else {
            if case .success(let connection) = result { connection.closeOnLoop() }
            return
        }
        self.completion = nil
        isFinished = true
        completion(result)
    }
}
