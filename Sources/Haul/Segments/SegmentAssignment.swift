import HaulHTTP
import HaulIO

/// What one connection is told to fetch in one exchange: decided by ``DownloadStateMachine``, carried out
/// by a ``SegmentWorker``, never changed while it runs (a redirect or a retry is a new assignment).
///
/// A class because nothing changes it once made: the machine keeps it on its connection, hands it out in an
/// action, the worker keeps it and its completion refers to it — copies of a struct holding a URL and a
/// request head retained every string and array in them each time, several times per small file.
final class SegmentAssignment {
    enum Role: Equatable {
        /// The first request, which also learns the length and validators.
        case probe
        /// A request for one segment.
        case ranged
        /// `Range: bytes=0-0` to a mirror, to compare its length before anything is written.
        case mirrorCheck
    }

    let connection: Int
    /// Tells this exchange's end from a stale one (a connection stopped and given new work meanwhile).
    let serial: Int
    let role: Role
    /// Bytes asked for: `first..<end` (nil end: to the end of the file).
    let first: Int64
    let end: Int64?
    /// The mirror the request went to: what its response says is about that mirror.
    let mirror: Int
    /// Where the request goes (a redirect's hop, or the mirror's resolved URL): the head's, not a second copy.
    var url: HTTPURL { head.url }
    /// Whether the request carries `Range` (a probe in the ``ProbeForm/withoutRange`` form does not).
    let sendsRange: Bool
    let sentIfRange: Bool
    /// Whether the request carried `If-None-Match`/`If-Modified-Since` (``ConditionalProbe``).
    let sentConditional: Bool
    /// The tries of this connection in a row, this one included (for the log).
    let attempt: Int
    let head: RequestHead

    init(connection: Int, serial: Int, role: Role, first: Int64, end: Int64?, mirror: Int, sendsRange: Bool,
         sentIfRange: Bool, sentConditional: Bool = false, attempt: Int, head: RequestHead) {
        self.connection = connection
        self.serial = serial
        self.role = role
        self.first = first
        self.end = end
        self.mirror = mirror
        self.sendsRange = sendsRange
        self.sentIfRange = sentIfRange
        self.sentConditional = sentConditional
        self.attempt = attempt
        self.head = head
    }

    /// How this request asked, when it is the probe.
    var probeForm: ProbeForm { !sendsRange ? .withoutRange : end.map { .bounded(end: $0) } ?? .openEnded }
}

/// What a worker does with the body of a response whose head it was given.
struct HeadAnswer {
    var decision: HeadDecision
    /// The bytes of the body that belong in the file; nil when the body is only drained (a redirect, a
    /// refused probe, an empty file's error text).
    var window: BodyWindow?

    static let drain = HeadAnswer(decision: .receiveBody, window: nil)
    static let abandon = HeadAnswer(decision: .abandon, window: nil)
}

/// How one exchange ended, reported once by its worker.
struct ExchangeEnd {
    let connection: Int
    let serial: Int
    let outcome: Result<ExchangeSummary, HTTPClientError>
    /// The body window as it stood at the end (how much of the range came).
    let window: BodyWindow?
    /// The server's `Retry-After` on the response, if any.
    let retryAfter: Duration?
}
