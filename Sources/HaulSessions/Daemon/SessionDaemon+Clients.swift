import Glibc
import HaulIO
import SystemPackage

// The daemon's clients: accepting them on the session's socket, reading their lines, answering them.
extension SessionDaemon {
    // MARK: Clients

    func acceptClients() {
        guard let listener else { return }
        while true {
            // Whatever this iteration does not hand to a client is closed when the iteration ends.
            let accepted: OwnedFileDescriptor?
            do { accepted = try UnixSocket.accept(on: listener.socket.descriptor) } catch { return }
            guard let socket = accepted else { return }
            let peer: PeerCredentials
            do { peer = try PeerCredentials.of(socket.descriptor) } catch {
                say("refused a client: cannot read its credentials: \(error)")
                continue
            }
            if let refusal = PeerPolicy.refusal(peer: peer, owner: geteuid()) {
                say("refused a client: \(refusal)")
                let line = ProtocolCodec.encode(.reply(id: nil, .failure(RemoteFailure(code: "refused", message: refusal))))
                _ = try? UnixSocket.send(line, from: 0, on: socket.descriptor)
                continue
            }
            let client = DaemonConnection(id: nextClientID, socket: socket, peer: peer)
            nextClientID += 1
            do {
                client.registration = try loop.register(client.socket, interest: .readable) { [self] events in clientEvent(client, events) }
            } catch {
                client.close(loop: loop)
                continue
            }
            clients[client.id] = client
        }
    }

    func clientEvent(_ client: DaemonConnection, _ events: IOEvents) {
        guard !client.isClosed else { return }
        if events.contains(.writable) {
            if !client.flush(loop: loop) { return drop(client, reason: client.failure) }
        }
        if events.contains(.readable) || events.contains(.hangup) || events.contains(.error) {
            switch client.read() {
            case .lines: process(client)
            case .closed(let reason):
                // Lines that came before the close are still answered when they can be (a client may
                // send `stop` and close at once); what cannot be sent is dropped with the connection.
                process(client)
                drop(client, reason: reason)
            }
        }
    }

    func drop(_ client: DaemonConnection, reason: String?) {
        guard !client.isClosed else { return }
        if let reason { say("dropped client \(client.id) (process \(client.peer.pid)): \(reason)") }
        client.close(loop: loop)
        clients[client.id] = nil
    }

    /// Handles the client's pending request lines one at a time.
    func process(_ client: DaemonConnection) {
        guard !processing.contains(client.id) else { return }
        processing.insert(client.id)
        defer { processing.remove(client.id) }
        while !client.busy, !client.pendingLines.isEmpty {
            let line = client.pendingLines.removeFirst()
            client.busy = true
            let decoded: (id: Int64, request: SessionRequest)
            do {
                decoded = try ProtocolCodec.decodeRequest(line)
            } catch {
                reply(client, error.id, .failure(.badRequest(error.message)))
                continue
            }
            handle(decoded.request, id: decoded.id, from: client)
        }
    }

    func reply(_ client: DaemonConnection, _ id: Int64?, _ result: Result<ReplyBody, RemoteFailure>) {
        client.busy = false
        if !client.send(ProtocolCodec.encode(.reply(id: id, result)), loop: loop) { return drop(client, reason: client.failure) }
        process(client)
    }
}
