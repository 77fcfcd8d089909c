/// A session daemon that speaks another protocol version than this library: what its `hello` answer said,
/// and what this side speaks. A library and a `haul` executable of different releases can meet (an app's
/// HaulSessions, an older `haul` on `PATH`); they do not talk past each other.
public struct DaemonVersionMismatch: Sendable, Hashable, CustomStringConvertible {
    /// The daemon's protocol version.
    public var daemonProtocol: Int
    /// The daemon's Haul version; nil from a daemon of protocol 1, which does not say.
    public var daemonHaulVersion: String?
    /// The daemon's executable as it named it; from a daemon of protocol 1, which does not say, the
    /// executable this configuration starts daemons with (``SessionConfiguration/resolvedDaemonExecutable``).
    public var executable: String?
    /// What this library speaks: ``SessionProtocol/version`` and ``SessionProtocol/haulVersion``.
    public var clientProtocol: Int
    public var clientHaulVersion: String

    public init(daemonProtocol: Int, daemonHaulVersion: String?, executable: String?,
                clientProtocol: Int = SessionProtocol.version, clientHaulVersion: String = SessionProtocol.haulVersion) {
        self.daemonProtocol = daemonProtocol
        self.daemonHaulVersion = daemonHaulVersion
        self.executable = executable
        self.clientProtocol = clientProtocol
        self.clientHaulVersion = clientHaulVersion
    }

    public var description: String {
        let daemonHaul = daemonHaulVersion.map { "Haul " + $0 } ?? (daemonProtocol < clientProtocol ? "an older Haul" : "Haul version unknown")
        return "the session daemon (\(executable ?? "executable unknown")) speaks protocol \(daemonProtocol) (\(daemonHaul)); "
            + "this program speaks protocol \(clientProtocol) (Haul \(clientHaulVersion)): stop that daemon with its own "
            + "`haul queue stop`, and start daemons with a haul of version \(clientHaulVersion) "
            + "(SessionConfiguration.daemonExecutable or HAUL_EXECUTABLE)"
    }
}

extension SessionProtocol {
    /// What a client makes of the daemon's answer to its `hello`: nil when the daemon speaks this library's
    /// protocol, else the error to stop at (an incompatible daemon is not retried).
    ///
    /// From protocol 2 on a daemon answers `hello` whatever version the client speaks, naming its own; a
    /// daemon of protocol 1 refuses another version with `unsupported-protocol`, so that refusal means
    /// protocol 1. `executable` is what this side starts daemons with, named when the daemon does not say.
    static func helloRefusal(_ answer: Result<ReplyBody, SessionError>, executable: String?) -> SessionError? {
        switch answer {
        case .success(let body):
            guard let daemonProtocol = body.protocolVersion else {
                return .protocolViolation("the daemon answered hello without its protocol version")
            }
            guard daemonProtocol != version else { return nil }
            return .incompatibleDaemon(DaemonVersionMismatch(
                daemonProtocol: daemonProtocol, daemonHaulVersion: body.haulVersion, executable: body.executable ?? executable))
        case .failure(.rejected(code: "unsupported-protocol", _)):
            return .incompatibleDaemon(DaemonVersionMismatch(daemonProtocol: 1, daemonHaulVersion: nil, executable: executable))
        case .failure(let error):
            return error
        }
    }
}
