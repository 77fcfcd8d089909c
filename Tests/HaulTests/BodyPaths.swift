import Testing
import HaulTestSupport
@testable import Haul

/// The two ways a response body reaches the file (``DownloadOptions/splicesBodies``): read into the receive
/// buffer and written with `pwrite`, or spliced socket → pipe → file. The body-framing tests against the
/// misbehaving server (overruns, short bodies, close-delimited and chunked bodies, lying ranges, stalls, the
/// chaos run) take one as an argument and run on both.
enum BodyPath: String, CaseIterable, Sendable, CustomTestStringConvertible {
    case received
    case spliced

    var testDescription: String { rawValue }

    /// `options` with this path chosen.
    func applied(to options: DownloadOptions) -> DownloadOptions {
        var options = options
        options.splicesBodies = self == .spliced
        return options
    }

    /// What ``SegmentWorker`` logs (debug) the first time an exchange splices.
    static let splicingMessage = "splicing the body into the file"

    /// Expects the downloads logged to `store` to have taken this path: on ``received`` no body was spliced,
    /// on ``spliced`` at least one was (where the test's server sends any `Content-Length` body that fits a
    /// range: `spliceExpected`).
    func expectTaken(in store: CapturingLogHandler.Store, spliceExpected: Bool = true,
                     sourceLocation: SourceLocation = #_sourceLocation) {
        let splices = store.with(Self.splicingMessage).count
        switch self {
        case .received:
            #expect(splices == 0, "splicing is off, yet \(splices) exchanges spliced", sourceLocation: sourceLocation)
        case .spliced:
            if spliceExpected {
                #expect(splices > 0, "splicing is on, yet no exchange spliced", sourceLocation: sourceLocation)
            }
        }
    }
}
