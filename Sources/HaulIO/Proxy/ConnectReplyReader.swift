import HaulHTTP

/// Reads an HTTP proxy's answer to `CONNECT` with the ordinary ``ResponseParser``, stopping at the final
/// response head: after a 2xx the bytes that follow belong to the tunnel, not to a body. Pure.
public struct ConnectReplyReader {
    /// What the bytes fed so far amount to.
    public enum Outcome {
        /// The head is not complete yet.
        case needMoreInput
        /// The final head (interim 1xx heads are skipped) and how many bytes of the last input followed it.
        case head(ResponseHead, bytesAfterHead: Int)
    }

    private var parser: ResponseParser

    /// A reader for one reply.
    public init(limits: ParserLimits = ParserLimits()) {
        parser = ResponseParser(requestWasHead: false, limits: limits)
    }

    /// Feeds the next bytes received.
    public mutating func feed(_ input: UnsafeRawBufferPointer) throws(HTTPParseError) -> Outcome {
        var offset = 0
        while true {
            let (event, consumed) = try parser.parse(UnsafeRawBufferPointer(rebasing: input[offset...]))
            offset += consumed
            switch event {
            case .interim:
                continue
            case .head(let head):
                return .head(head, bytesAfterHead: input.count - offset)
            case .needMoreInput, .body, .end:
                // Before the head the parser takes every byte it is given, so only `.needMoreInput` comes here.
                return .needMoreInput
            }
        }
    }

    /// What a `CONNECT` reply means: `nil` when the tunnel is open (2xx), otherwise why not. A `407` is a
    /// demand for credentials when none were sent, and a rejection of them when they were.
    public static func failure(for head: ResponseHead, credentialsSent: Bool) -> ProxyFailure.Reason? {
        switch head.status {
        case 200..<300:
            return nil
        case 407:
            return credentialsSent ? .credentialsRejected(status: 407) : .authenticationRequired(status: 407)
        default:
            return .tunnelRefused(status: head.status, reason: head.reason)
        }
    }
}
