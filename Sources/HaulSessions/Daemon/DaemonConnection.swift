import Glibc
import Haul
import HaulIO
import SystemPackage

/// One client of the daemon, on the daemon's loop: lines in, lines out, one request handled at a time so
/// that replies come in the order of the requests (pushes may come in between).
///
/// Loop-confined: every member is touched on the daemon's loop thread only.
final class DaemonConnection {
    let id: Int
    /// The connected socket, for I/O; valid until ``close(loop:)``.
    let socket: FileDescriptor
    /// Owns ``socket``: set to nil by ``close(loop:)``, which closes it (or with this object).
    private var owner: OwnedFileDescriptor?
    let peer: PeerCredentials
    var registration: FileDescriptorRegistration?
    private var splitter = LineSplitter()
    /// Request lines received and not yet handled.
    var pendingLines: [[UInt8]] = []
    /// Whether a request is being handled (its reply not sent yet).
    var busy = false
    private var output: [UInt8] = []
    private var outputStart = 0
    private var wantsWritable = false
    private(set) var isClosed = false
    /// Set by `subscribe`: events up to this sequence number have been pushed; later ones will be.
    var pushedThrough: UInt64?
    var wantsProgress = false

    /// A client that stops reading while the daemon keeps pushing is cut off past this much unsent output.
    static let maximumBufferedOutput = 64 << 20

    init(id: Int, socket: consuming OwnedFileDescriptor, peer: PeerCredentials) {
        self.id = id
        self.socket = socket.descriptor
        owner = .some(socket)
        self.peer = peer
    }

    enum ReadOutcome {
        case lines
        case closed(reason: String?)
    }

    /// Reads what is there; new complete lines go to ``pendingLines``.
    func read() -> ReadOutcome {
        var buffer = [UInt8](repeating: 0, count: 64 << 10)
        var reads = 0
        while reads < 16 {
            reads += 1
            let count: Int
            switch UnixSocket.read(from: socket, into: &buffer) {
            case .success(.processed(let value)): count = value
            case .success(.wouldBlock): return .lines
            case .failure(let error): return .closed(reason: error.description)
            }
            if count == 0 { return .closed(reason: nil) }
            do {
                pendingLines += try splitter.feed(buffer[0..<count])
            } catch {
                return .closed(reason: "a line longer than \(SessionProtocol.maximumLineBytes) bytes")
            }
        }
        return .lines
    }

    /// Queues `bytes` and sends what the socket takes now; false when the client must be dropped (it
    /// stopped reading, or the socket failed).
    func send(_ bytes: [UInt8], loop: EventLoop) -> Bool {
        guard !isClosed else { return true }
        output += bytes
        return flush(loop: loop)
    }

    /// Why the latest send failed in a way worth logging (a client that stopped reading); nil when the
    /// client simply went away.
    private(set) var failure: String?

    /// Sends buffered output; false when the client must be dropped.
    func flush(loop: EventLoop) -> Bool {
        while outputStart < output.count {
            let result: IOResult<Int>
            do { result = try UnixSocket.send(output, from: outputStart, on: socket) } catch { return false }
            guard case .processed(let count) = result else { break }
            outputStart += count
        }
        if outputStart == output.count {
            output.removeAll(keepingCapacity: output.count < 1 << 20)
            outputStart = 0
        } else if outputStart > 1 << 20 {
            output.removeFirst(outputStart)
            outputStart = 0
        }
        let pending = output.count > outputStart
        guard output.count - outputStart <= Self.maximumBufferedOutput else {
            failure = "stopped reading (\(output.count - outputStart) bytes unsent)"
            return false
        }
        if pending != wantsWritable, let registration {
            wantsWritable = pending
            try? loop.setInterest(pending ? [.readable, .writable] : .readable, for: registration)
        }
        return true
    }

    var hasPendingOutput: Bool { output.count > outputStart }

    func close(loop: EventLoop) {
        guard !isClosed else { return }
        isClosed = true
        if let registration { loop.deregister(registration) }
        registration = nil
        owner = nil
    }
}
