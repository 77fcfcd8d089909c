import Haul
import HaulHTTP
import HaulIO

/// `--url-command`: a shell command that prints a fresh URL when a download's URL expires mid-download (a
/// signed link), for `haul` and for queued tasks alike. It becomes the download's `URLRefresher`
/// (``refresher(report:)``).
///
/// Run by `/bin/sh -c` with `HAUL_URL` (the URL that expired), `HAUL_STATUS` (the status it answered) and
/// `HAUL_ERROR` (the failure, one line) in its environment, standard input from `/dev/null` and its standard
/// error on Haul's. The first line of its standard output (spaces and a trailing CR trimmed) is the new URL.
/// Bounded: killed with its process group at ``timeout``, and at most ``outputLimit`` bytes of output are
/// read. A non-zero exit, a timeout, no line, or a line that is not an http(s) URL gives up: the download
/// fails with the original error, and `report` says why.
public struct URLCommand: Sendable, Hashable {
    /// Longest a command may run by default: the download waits for it.
    public static let defaultTimeout: Duration = .seconds(30)
    /// Most bytes of its output read.
    public static let outputLimit = 64 * 1024

    public var command: String
    public var timeout: Duration

    public init(_ command: String, timeout: Duration = URLCommand.defaultTimeout) {
        self.command = command
        self.timeout = timeout
    }

    /// What the command's run means: the new URL, or why there is none (a line for the user).
    public enum Answer: Sendable, Equatable {
        case url(HTTPURL)
        case giveUp(String)
    }

    /// Reads `outcome` (pure): the first line of a successful run's output, which must be an http(s) URL.
    package static func interpret(_ outcome: CommandOutcome, timeout: Duration) -> Answer {
        switch outcome.end {
        case .timedOut: return .giveUp("did not finish within \(timeout.components.seconds) s and was killed")
        case .exited(let status) where status != 0: return .giveUp("exited with status \(status)")
        case .exited: break
        }
        let lineEnd = outcome.output.firstIndex(of: UInt8(ascii: "\n"))
        guard lineEnd != nil || !outcome.outputTruncated else {
            return .giveUp("printed more than \(outputLimit) bytes without a line end")
        }
        let line = outcome.output[..<(lineEnd ?? outcome.output.endIndex)]
        let text = String(decoding: line, as: UTF8.self).trimmingSpaces
        guard !text.isEmpty else { return .giveUp("printed no URL") }
        do {
            return .url(try HTTPURL(text))
        } catch {
            return .giveUp("printed \"\(String(text.prefix(200)))\", which is not a usable http(s) URL: \(error)")
        }
    }

    /// The refresher that runs this command (on a blocking-work thread, never on the cooperative pool);
    /// `report` hears a line for each URL it gave (`gaveUp` false) and each refresh that gave up (true).
    public func refresher(report: @escaping @Sendable (_ line: String, _ gaveUp: Bool) -> Void) -> URLRefresher {
        let command = command, timeout = timeout
        return { expired, failure in
            var status = ""
            if case .httpStatus(let code, _, _) = failure.reason { status = String(code) }
            let environment = ["HAUL_URL": expired.absoluteText, "HAUL_STATUS": status,
                               "HAUL_ERROR": failure.description.split(separator: "\n").joined(separator: " ")]
            let outcome = await BlockingWork.run { () -> Result<CommandOutcome, SystemError> in
                Result { () throws(SystemError) in
                    try ChildProcesses.run(["/bin/sh", "-c", command], environment: environment, timeout: timeout,
                                           outputLimit: URLCommand.outputLimit)
                }
            }
            switch outcome {
            case .failure(let error):
                report("--url-command could not be run: \(error); giving up on \(expired)", true)
                return nil
            case .success(let outcome):
                switch Self.interpret(outcome, timeout: timeout) {
                case .url(let url) where url == expired:
                    report("--url-command printed the URL that just failed: giving up on \(expired) (\(failure))", true)
                    return nil
                case .url(let url):
                    report("\(expired) answered \(status.isEmpty ? "an error" : status): trying the URL --url-command printed", false)
                    return url
                case .giveUp(let why):
                    report("--url-command \(why): giving up on \(expired) (\(failure))", true)
                    return nil
                }
            }
        }
    }
}

extension String {
    /// Without leading and trailing spaces, tabs and CRs.
    fileprivate var trimmingSpaces: String {
        let blank: (Character) -> Bool = { $0 == " " || $0 == "\t" || $0 == "\r" }
        return String(drop(while: blank).reversed().drop(while: blank).reversed())
    }
}
