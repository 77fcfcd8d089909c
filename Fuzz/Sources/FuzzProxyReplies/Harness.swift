import FuzzDriver
import HaulHTTP
import HaulIO

/// A proxy's replies during the handshake (HTTP `CONNECT`, SOCKS5 method selection, authentication and
/// CONNECT) come from whatever answers on the proxy's port. The decoder must never crash, must decide within
/// a bounded number of bytes, must give only the decisions the handshake can act on (anything else traps
/// there), and its decision must depend only on the bytes received, not on how they were cut. One allowance:
/// the HTTP head parser judges a partial line at once only in the first bytes it gets, later ones when their
/// line ends (re-validating on every read would be wasted), so a broken HTTP reply may fail sooner when more of
/// it arrives at once.
///
/// Input layout: the first byte is a control byte, the rest is what the proxy sends.
/// - bits 0–2 (mod 6): the reply expected: HTTP CONNECT without / with credentials sent, SOCKS5 method
///   selection without / with username/password offered, SOCKS5 authentication, SOCKS5 CONNECT;
/// - bit 3: tight HTTP limits (small heads, few fields and interim responses) instead of the defaults;
/// - bits 4–7: the seed of a random split.
func fuzzProxyReplies(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    guard let control = input.first else { return 0 }
    let body = Array(input.dropFirst())
    let reply = replies[Int(control & 7) % replies.count]
    let limits = control & 8 != 0
        ? ParserLimits(maxHeadBytes: 128, maxFields: 8, maxChunkLineBytes: 32, maxTrailerBytes: 64, maxInterimResponses: 2)
        : ParserLimits()
    func fresh() -> ProxyReplyDecoder { ProxyReplyDecoder(expecting: reply, limits: limits) }

    // All at once.
    var wholeDecoder = fresh()
    let whole = wholeDecoder.feed(body)
    check(whole, for: reply)

    // A byte at a time: the decision comes at the reply's last byte.
    var bytewiseDecoder = fresh()
    var bytewise = ProxyReplyDecoder.Decision.needMoreInput
    var decidedAt = body.count
    for index in body.indices {
        bytewise = bytewiseDecoder.feed(body[index...index])
        if bytewise != .needMoreInput {
            decidedAt = index + 1
            break
        }
        if reply != .httpConnect(credentialsSent: false) && reply != .httpConnect(credentialsSent: true) {
            precondition(bytewiseDecoder.bufferedByteCount == index + 1, "SOCKS5 bytes not all held")
        }
    }
    check(bytewise, for: reply)
    precondition(decidedAt <= maximumReplyBytes(reply, limits), "no decision after \(decidedAt) bytes")
    if bytewise == .needMoreInput {
        precondition(agree(whole, .needMoreInput, reply), "undecided a byte at a time, \(whole) at once")
    } else if decidedAt == body.count {
        precondition(whole == bytewise, "\(bytewise) a byte at a time, \(whole) at once")
    } else {
        // Bytes after the reply: the same refusal, or a protocol error for the extra bytes.
        var isMalformed = false
        if case .failed(.malformedReply) = whole { isMalformed = true }
        precondition(whole == bytewise || isMalformed, "\(bytewise) a byte at a time, \(whole) with more bytes")
        if case .failed = bytewise {} else {
            precondition(isMalformed, "bytes after a \(bytewise) reply were accepted: \(whole)")
        }
    }
    // Decided means decided: more bytes change nothing.
    if bytewise != .needMoreInput {
        precondition(bytewiseDecoder.feed([0x0D, 0x0A, 0x05, 0x00]) == bytewise, "a decision changed after more input")
        precondition(bytewiseDecoder.bufferedByteCount == 0, "bytes held after a decision")
    }

    // Random pieces (empty ones too): the decision is the one for the bytes up to the piece that completed it.
    var splitter = InputSplitter(seed: UInt64(control >> 4))
    var splitDecoder = fresh()
    var split = ProxyReplyDecoder.Decision.needMoreInput
    var end = 0
    for piece in splitter.pieces(count: body.count) {
        split = splitDecoder.feed(body[piece])
        end = piece.upperBound
        if split != .needMoreInput { break }
    }
    var prefixDecoder = fresh()
    let prefix = prefixDecoder.feed(body[..<end])
    precondition(agree(split, prefix, reply), "\(split) in pieces, \(prefix) for the same bytes at once")
    if split == .needMoreInput { precondition(agree(whole, .needMoreInput, reply)) }
    return 0
}

/// The same decision, or (HTTP only) a protocol error that one way of feeding found before the other.
func agree(_ one: ProxyReplyDecoder.Decision, _ other: ProxyReplyDecoder.Decision, _ reply: ProxyReplyDecoder.Reply) -> Bool {
    if one == other { return true }
    guard case .httpConnect = reply else { return false }
    switch (one, other) {
    case (.needMoreInput, .failed(.malformedReply)), (.failed(.malformedReply), .needMoreInput): return true
    default: return false
    }
}

let replies: [ProxyReplyDecoder.Reply] = [
    .httpConnect(credentialsSent: false), .httpConnect(credentialsSent: true),
    .socksMethodSelection(credentialsOffered: false), .socksMethodSelection(credentialsOffered: true),
    .socksAuthentication, .socksConnect,
]

/// The most bytes a reply can take before it is decided: a whole SOCKS5 message, or every head the HTTP
/// parser allows (interim ones and the final one) at its size limit.
func maximumReplyBytes(_ reply: ProxyReplyDecoder.Reply, _ limits: ParserLimits) -> Int {
    switch reply {
    case .httpConnect: (limits.maxInterimResponses + 1) * limits.maxHeadBytes
    case .socksMethodSelection, .socksAuthentication: 2
    case .socksConnect: ProxyReplyDecoder.maximumSOCKSReplyBytes
    }
}

/// Only decisions that ``ProxyHandshake`` can act on at that step, and failures that fit the protocol.
func check(_ decision: ProxyReplyDecoder.Decision, for reply: ProxyReplyDecoder.Reply) {
    switch (reply, decision) {
    case (_, .needMoreInput), (_, .failed(.malformedReply)):
        break
    case (.httpConnect, .tunnelOpen):
        break
    case (.httpConnect(let credentialsSent), .failed(.authenticationRequired(let status))):
        precondition(!credentialsSent && status == 407)
    case (.httpConnect(let credentialsSent), .failed(.credentialsRejected(let status))):
        precondition(credentialsSent && status == 407)
    case (.httpConnect, .failed(.tunnelRefused(let status, _))):
        precondition(status != 407 && !(200..<300).contains(status), "status \(status) taken as a refusal")
    case (.socksMethodSelection, .connect):
        break
    case (.socksMethodSelection(let offered), .authenticate):
        precondition(offered, "username/password chosen but not offered")
    case (.socksMethodSelection(let offered), .failed(.socksNoAcceptableMethod(let said))):
        precondition(offered == said)
    case (.socksAuthentication, .connect), (.socksAuthentication, .failed(.socksCredentialsRejected)):
        break
    case (.socksConnect, .tunnelOpen):
        break
    case (.socksConnect, .failed(.socksConnectFailed(let code))):
        precondition(code != .succeeded)
    default:
        preconditionFailure("\(decision) is not a decision for \(reply)")
    }
}

@_cdecl("FuzzProxyReplies_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzProxyReplies($0, $1) }
}
