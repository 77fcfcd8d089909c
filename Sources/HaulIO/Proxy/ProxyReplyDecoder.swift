import HaulHTTP

/// Decodes one reply of a proxy handshake and says what it means, without I/O: bytes in, a decision out.
/// `ProxyHandshake` does the reading and writing and acts on the decisions; keeping the decoding here lets
/// tests and the fuzzer drive every byte sequence a proxy could send.
///
/// One decoder reads one reply (the handshake makes a new one per step). Feed it the bytes as they arrive,
/// in pieces of any size; it answers ``Decision/needMoreInput`` until the reply is whole, then the same
/// decision for every later call. The decision depends only on the bytes received, not on how they were cut,
/// with one allowance: the HTTP head parser may find a broken line sooner when more of it arrives at once.
public struct ProxyReplyDecoder {
    /// The reply expected: what was just sent decides what may come back.
    public enum Reply: Sendable, Hashable {
        /// The answer to an HTTP `CONNECT`; a `407` means different things with and without credentials.
        case httpConnect(credentialsSent: Bool)
        /// The SOCKS5 method selection (RFC 1928 §3), after a greeting that did or did not offer
        /// username/password.
        case socksMethodSelection(credentialsOffered: Bool)
        /// The SOCKS5 username/password status (RFC 1929).
        case socksAuthentication
        /// The SOCKS5 CONNECT reply (RFC 1928 §6).
        case socksConnect
    }

    /// What the reply means.
    public enum Decision: Sendable, Hashable {
        /// The reply is not whole yet.
        case needMoreInput
        /// SOCKS5: the proxy chose username/password; send the credentials.
        case authenticate
        /// SOCKS5: no authentication needed, or the credentials were accepted; send the CONNECT.
        case connect
        /// The tunnel to the target is open (HTTP 2xx, SOCKS5 reply 0); the next bytes belong to the origin.
        case tunnelOpen
        /// The proxy refused, or its reply broke the protocol.
        case failed(ProxyFailure.Reason)
    }

    /// The longest SOCKS5 CONNECT reply: `05 REP 00 03 LEN` and a 255-byte name and the port. Method
    /// selection and authentication replies are two bytes.
    public static let maximumSOCKSReplyBytes = 5 + 255 + 2

    /// The reply this decoder reads.
    public let expecting: Reply
    private var connectReader: ConnectReplyReader
    /// SOCKS5 bytes received so far: the decoders take the whole message at once.
    private var received: [UInt8] = []
    private var decided: Decision?

    /// A decoder for `expecting`; `limits` bound an HTTP proxy's reply heads.
    public init(expecting: Reply, limits: ParserLimits = ParserLimits()) {
        self.expecting = expecting
        connectReader = ConnectReplyReader(limits: limits)
    }

    /// SOCKS5 bytes held while the reply is incomplete (an HTTP reply's are held by its parser).
    public var bufferedByteCount: Int { received.count }

    /// Feeds the next bytes received.
    public mutating func feed(_ input: UnsafeRawBufferPointer) -> Decision {
        if let decided { return decided }
        let decision: Decision
        switch expecting {
        case .httpConnect(let credentialsSent):
            decision = decodeConnect(input, credentialsSent: credentialsSent)
        case .socksMethodSelection(let credentialsOffered):
            decision = decodeSOCKS(input, { bytes throws(SOCKS5.ProtocolError) in
                try SOCKS5.parseMethodSelection(bytes).map { ($0.method, $0.consumed) }
            }) { method in
                switch SOCKS5.Method(rawValue: method) {
                case .noAuthentication:
                    return .connect
                case .usernamePassword where credentialsOffered:
                    return .authenticate
                case .noAcceptableMethods:
                    return .failed(.socksNoAcceptableMethod(credentialsOffered: credentialsOffered))
                default:
                    return .failed(.malformedReply("the proxy chose authentication method \(method), which was not offered"))
                }
            }
        case .socksAuthentication:
            decision = decodeSOCKS(input, { bytes throws(SOCKS5.ProtocolError) in
                try SOCKS5.parseAuthenticationReply(bytes).map { ($0.status, $0.consumed) }
            }) { status in
                status == 0 ? .connect : .failed(.socksCredentialsRejected(status: status))
            }
        case .socksConnect:
            decision = decodeSOCKS(input, { bytes throws(SOCKS5.ProtocolError) in
                try SOCKS5.parseConnectReply(bytes).map { ($0.reply, $0.consumed) }
            }) { reply in
                reply.code == .succeeded ? .tunnelOpen : .failed(.socksConnectFailed(reply.code))
            }
        }
        if decision != .needMoreInput {
            decided = decision
            received = []
        }
        return decision
    }

    /// Feeds the next bytes received.
    public mutating func feed(_ bytes: some Collection<UInt8>) -> Decision {
        Array(bytes).withUnsafeBytes { feed($0) }
    }

    private mutating func decodeConnect(_ input: UnsafeRawBufferPointer, credentialsSent: Bool) -> Decision {
        let outcome: ConnectReplyReader.Outcome
        do throws(HTTPParseError) {
            outcome = try connectReader.feed(input)
        } catch {
            return .failed(.malformedReply(error.description))
        }
        switch outcome {
        case .needMoreInput:
            return .needMoreInput
        case .head(let head, let bytesAfterHead):
            if let reason = ConnectReplyReader.failure(for: head, credentialsSent: credentialsSent) {
                return .failed(reason)
            }
            if bytesAfterHead > 0 {
                // The client speaks first in a tunnel (TLS ClientHello): nothing may come before it.
                return .failed(.malformedReply("\(bytesAfterHead) unexpected bytes after the \(head.status) reply"))
            }
            return .tunnelOpen
        }
    }

    /// Adds `input` to what was received and decodes it; bytes beyond a whole message are a protocol error,
    /// since a SOCKS5 server says nothing more before the client has acted on its message.
    private mutating func decodeSOCKS<Message>(
        _ input: UnsafeRawBufferPointer,
        _ decode: ([UInt8]) throws(SOCKS5.ProtocolError) -> (Message, consumed: Int)?,
        meaning: (Message) -> Decision
    ) -> Decision {
        received += input
        let decoded: (Message, consumed: Int)?
        do throws(SOCKS5.ProtocolError) {
            decoded = try decode(received)
        } catch {
            return .failed(.malformedReply(error.message))
        }
        guard let (message, consumed) = decoded else { return .needMoreInput }
        guard consumed == received.count else {
            return .failed(.malformedReply("\(received.count - consumed) unexpected bytes after the reply"))
        }
        return meaning(message)
    }
}
