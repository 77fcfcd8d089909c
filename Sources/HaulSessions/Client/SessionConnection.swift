import Glibc
import Haul
import HaulIO
import SystemPackage
import Synchronization

/// One connection to a session's daemon, on an event loop: requests out, replies matched to them, pushes
/// handed to a callback in the order they came.
final class SessionConnection: @unchecked Sendable {
    // @unchecked Sendable: everything under "Loop-confined" is touched on `loop` only.

    let loop: EventLoop
    private let onPush: @Sendable (DaemonMessage) -> Void
    private let onClose: @Sendable (SessionError) -> Void

    // MARK: Loop-confined

    /// The connected socket, for I/O; valid until ``shut(_:notify:)``.
    private let socket: FileDescriptor
    /// Owns ``socket``: set to nil by ``shut(_:notify:)``, which closes it (or with this object).
    private var owner: OwnedFileDescriptor?
    private var registration: FileDescriptorRegistration?
    private var splitter = LineSplitter()
    private var output: [UInt8] = []
    private var wantsWritable = false
    private var nextID: Int64 = 1
    private var pending: [Int64: (continuation: CheckedContinuation<Result<ReplyBody, SessionError>, Never>,
                                  onLoop: (@Sendable (ReplyBody) -> Void)?)] = [:]
    private var closedWith: SessionError?

    private init(loop: EventLoop, socket: consuming OwnedFileDescriptor, onPush: @escaping @Sendable (DaemonMessage) -> Void,
                 onClose: @escaping @Sendable (SessionError) -> Void) {
        self.loop = loop
        self.socket = socket.descriptor
        owner = .some(socket)
        self.onPush = onPush
        self.onClose = onClose
    }

    /// Connects to the socket at `path` (which must be served by a process of this user) and says hello.
    /// Throws ``SessionError/daemonUnavailable(_:)`` when nothing listens there, and
    /// ``SessionError/incompatibleDaemon(_:)`` when the daemon speaks another protocol version (naming
    /// `executable`, what this side starts daemons with, when the daemon does not name its own).
    static func open(path: String, executable: String?, loop: EventLoop, onPush: @escaping @Sendable (DaemonMessage) -> Void,
                     onClose: @escaping @Sendable (SessionError) -> Void) async throws(SessionError) -> (SessionConnection, ReplyBody) {
        // Connecting a Unix socket does not wait on anything remote (it fails or succeeds at once), but it
        // is a system call all the same: made on a blocking-work thread, not the cooperative pool.
        // The descriptor crosses threads released, and is owned again at once: nothing between can throw.
        let result: Result<FileDescriptor, SessionError> = await BlockingWork.run {
            let socket: OwnedFileDescriptor
            do { socket = try UnixSocket.connect(to: path) } catch {
                return .failure(.daemonUnavailable("\(path): \(error)"))
            }
            do {
                let peer = try PeerCredentials.of(socket.descriptor)
                guard peer.uid == geteuid() else {
                    return .failure(.refused("\(path) is served by uid \(peer.uid), not by this user"))
                }
            } catch {
                return .failure(.daemonUnavailable("\(path): \(error)"))
            }
            do { try UnixSocket.setNonBlocking(socket.descriptor) } catch {
                return .failure(.daemonUnavailable("\(path): \(error)"))
            }
            return .success(socket.release())
        }
        let connection = SessionConnection(loop: loop, socket: OwnedFileDescriptor(try result.get()), onPush: onPush, onClose: onClose)
        let registered: Result<Void, SessionError> = await withCheckedContinuation { continuation in
            loop.execute {
                // On failure the connection, never registered, closes the socket when it goes.
                do throws(SystemError) {
                    connection.registration = try loop.register(connection.socket, interest: .readable) { events in connection.handle(events) }
                    continuation.resume(returning: .success(()))
                } catch {
                    continuation.resume(returning: .failure(.io(path: path, error)))
                }
            }
        }
        try registered.get()
        let answer: Result<ReplyBody, SessionError>
        do { answer = .success(try await connection.request(.hello(protocolVersion: SessionProtocol.version))) } catch { answer = .failure(error) }
        if let refusal = SessionProtocol.helloRefusal(answer, executable: executable) {
            connection.close()
            throw refusal
        }
        return (connection, try answer.get())
    }

    /// Sends `request` and waits for its reply; `onLoop` runs on the loop thread when the reply arrives,
    /// before any push that follows it is handed on.
    func request(_ request: SessionRequest, onLoop: (@Sendable (ReplyBody) -> Void)? = nil) async throws(SessionError) -> ReplyBody {
        let result: Result<ReplyBody, SessionError> = await withCheckedContinuation { continuation in
            loop.execute { [self] in
                if let closedWith { return continuation.resume(returning: .failure(closedWith)) }
                let id = nextID
                nextID += 1
                pending[id] = (continuation, onLoop)
                output += ProtocolCodec.encode(request, id: id)
                flush()
            }
        }
        return try result.get()
    }

    /// Closes the connection; pending requests fail with ``SessionError/disconnected``.
    func close() {
        loop.execute { [self] in shut(.disconnected, notify: false) }
    }

    private func handle(_ events: IOEvents) {
        guard closedWith == nil else { return }
        if events.contains(.writable) { flush() }
        guard closedWith == nil, events.contains(.readable) || events.contains(.hangup) || events.contains(.error) else { return }
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        for _ in 0..<16 {
            let count: Int
            switch UnixSocket.read(from: socket, into: &buffer) {
            case .success(.processed(let value)): count = value
            case .success(.wouldBlock): return
            case .failure: return shut(.disconnected, notify: true)
            }
            if count == 0 { return shut(.disconnected, notify: true) }
            let lines: [[UInt8]]
            do { lines = try splitter.feed(buffer[0..<count]) } catch {
                return shut(.protocolViolation("a line longer than \(SessionProtocol.maximumLineBytes) bytes"), notify: true)
            }
            for line in lines {
                let message: DaemonMessage
                do { message = try ProtocolCodec.decodeDaemonMessage(line) } catch { return shut(error, notify: true) }
                switch message {
                case .reply(let id, let result):
                    guard let id, let waiter = pending.removeValue(forKey: id) else {
                        // An answer to no request: the daemon refused this client outright, or is broken.
                        if case .failure(let failure) = result {
                            return shut(failure.code == "refused" ? .refused(failure.message) : .rejected(code: failure.code, message: failure.message),
                                        notify: true)
                        }
                        return shut(.protocolViolation("a reply to no request"), notify: true)
                    }
                    switch result {
                    case .success(let body):
                        waiter.onLoop?(body)
                        waiter.continuation.resume(returning: .success(body))
                    case .failure(let failure):
                        let error: SessionError = failure.code == "stopping" ? .stopping : .rejected(code: failure.code, message: failure.message)
                        waiter.continuation.resume(returning: .failure(error))
                    }
                case .event, .progress:
                    onPush(message)
                }
                if closedWith != nil { return }
            }
        }
    }

    private func flush() {
        guard closedWith == nil else { return }
        var sent = 0
        while sent < output.count {
            let result: IOResult<Int>
            do { result = try UnixSocket.send(output, from: sent, on: socket) } catch {
                output.removeFirst(sent)
                return shut(.disconnected, notify: true)
            }
            guard case .processed(let count) = result else { break }
            sent += count
        }
        output.removeFirst(sent)
        let waiting = !output.isEmpty
        if waiting != wantsWritable, let registration {
            wantsWritable = waiting
            try? loop.setInterest(waiting ? [.readable, .writable] : .readable, for: registration)
        }
    }

    private func shut(_ error: SessionError, notify: Bool) {
        guard closedWith == nil else { return }
        closedWith = error
        if let registration { loop.deregister(registration) }
        registration = nil
        owner = nil
        let waiters = pending.values
        pending = [:]
        for waiter in waiters { waiter.continuation.resume(returning: .failure(error)) }
        if notify { onClose(error) }
    }
}
