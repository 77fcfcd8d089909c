import Foundation
import Glibc

/// A server process (nginx, the proxies) run under a watchdog shell: the shell stops it on SIGTERM, and by
/// itself when the test process goes away (a crashed or killed test run must not leave servers behind; deinit
/// never runs then). Every server the tests start is started, waited for and stopped through here.
///
/// Spawned with `posix_spawn` and an empty signal mask, default signal dispositions and a process group of its
/// own: a test running on a Swift concurrency thread has most signals blocked, a spawned child inherits that
/// mask, and Squid (unlike nginx) never clears it, so it would not hear SIGTERM at all.
final class SupervisedProcess: @unchecked Sendable {
    // @unchecked Sendable: `state` is guarded by `lock`; `pid` is immutable after init.
    /// The watchdog shell's pid, which is also the process group of the server it runs.
    let pid: pid_t
    private let lock = NSLock()
    private var exited = false
    private var stopped = false

    private static let watchdogScript = """
        parent=$1; shift
        trap 'kill -TERM $child 2>/dev/null; wait $child; exit 0' TERM
        "$@" &
        child=$!
        while kill -0 "$parent" 2>/dev/null && kill -0 $child 2>/dev/null; do sleep 0.2; done  # polls for the test process's end
        kill -TERM $child 2>/dev/null
        wait $child
        """

    init(executable: String, arguments: [String], outputPath: String) throws {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        // Nothing else of the test process goes with it: tests run in parallel, and a descriptor another test
        // has open at this moment (the write end of a pipe it reads to its end, a listener it is about to stop)
        // would live on in a server that runs for the whole test run. Looked up, not linked: glibc has it
        // since 2.34.
        if let closeFrom = Self.addCloseFrom { _ = closeFrom(&actions, 3) }

        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var mask = sigset_t()
        sigemptyset(&mask)
        posix_spawnattr_setsigmask(&attributes, &mask)
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGHUP, SIGQUIT, SIGPIPE, SIGCHLD, SIGUSR1, SIGUSR2] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETPGROUP))

        let words = ["/bin/sh", "-c", Self.watchdogScript, "haul-proxy-watchdog", "\(getpid())", executable] + arguments
        var argv: [UnsafeMutablePointer<CChar>?] = words.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let result = posix_spawn(&pid, "/bin/sh", &actions, &attributes, &argv, environ)
        guard result == 0 else {
            throw TestSupportError("could not start \(executable): \(TestSupportError.describe(errno: result))")
        }
        self.pid = pid
    }

    deinit { stop() }

    private typealias AddCloseFrom = @convention(c) (UnsafeMutablePointer<posix_spawn_file_actions_t>, Int32) -> Int32

    /// glibc's `posix_spawn_file_actions_addclosefrom_np`, where there is one.
    private static let addCloseFrom: AddCloseFrom? = {
        guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "posix_spawn_file_actions_addclosefrom_np") else { return nil }
        return unsafeBitCast(symbol, to: AddCloseFrom.self)
    }()

    /// Whether the watchdog (and so the server) is still running; reaps it once it has exited.
    var isRunning: Bool {
        lock.withLock {
            guard !exited else { return false }
            var status: Int32 = 0
            if waitpid(pid, &status, WNOHANG) == pid { exited = true }
            return !exited
        }
    }

    /// Whether the server accepts connections on every one of `ports` on every one of `hosts`, on sockets of
    /// its own (``ListeningSockets``: a port another test's server took meanwhile accepts connections too),
    /// within `timeout` seconds (false as soon as it exits). Generous: Squid alone takes a second or two to
    /// start, and a loaded two-core machine running the suites in parallel can make that ten times longer.
    func waitUntilListening(ports: [UInt16], hosts: [String], timeout: Double = 60) -> Bool {
        var listening = false
        poll(every: .milliseconds(10), within: timeout) {
            guard isRunning else { return true }
            listening = ports.allSatisfy { port in hosts.allSatisfy { LoopbackPorts.acceptsConnections(host: $0, port: port) } }
                && ListeningSockets.processGroup(pid, listensOn: ports, hosts: hosts)
            return listening
        }
        return listening
    }

    /// Launches a server on `portCount` free loopback ports and waits until it listens on all of them, on
    /// each of `hosts`. Free ports are found by binding port 0 and releasing it; a port taken meanwhile by
    /// someone else (the server's output says "Address already in use", or `alsoRetryOn`) is tried again with
    /// others, up to five times; any other failure is reported with the tail of `logs`. `launch` writes the
    /// configuration for the ports it is given and starts the process.
    static func startOnFreePorts(_ portCount: Int = 1, hosts: [String] = ["127.0.0.1"], name: String, logs: [String],
                                 alsoRetryOn other: String? = nil,
                                 launch: ([UInt16]) throws -> SupervisedProcess) throws -> ([UInt16], SupervisedProcess) {
        var lastFailure = ""
        for _ in 0..<5 {
            let ports = try LoopbackPorts.freePorts(portCount)
            let process = try launch(ports)
            if process.waitUntilListening(ports: ports, hosts: hosts) { return (ports, process) }
            // What the readiness check saw last, for the report (the process may be gone already).
            let accepting = ports.filter { port in hosts.allSatisfy { LoopbackPorts.acceptsConnections(host: $0, port: port) } }
            let owned = ports.filter { ListeningSockets.processGroup(process.pid, listensOn: [$0], hosts: hosts) }
            let readiness = "\(name) on ports \(ports) (\(hosts.joined(separator: ", "))): running \(process.isRunning), "
                + "accepting on \(accepting), listening sockets of its own on \(owned)"
            process.stop()
            let text = logs.map { (try? String(contentsOfFile: $0, encoding: .utf8)) ?? "" }.joined(separator: "\n")
            lastFailure = readiness + "\n" + String(text.suffix(3000))
            guard lastFailure.contains("Address already in use") || other.map(lastFailure.contains) == true else { break }
        }
        throw TestSupportError("\(name) did not start:\n\(lastFailure)")
    }

    /// SIGTERM to the watchdog (which stops the server and waits for it); SIGKILL to the process group it leads
    /// if that takes more than 10 seconds; then reaps it. Returns false if it had already been stopped.
    @discardableResult
    func stop() -> Bool {
        let shouldStop = lock.withLock {
            defer { stopped = true }
            return !stopped
        }
        guard shouldStop else { return false }
        guard isRunning else { return true }
        kill(pid, SIGTERM)
        poll(within: 10) { !isRunning }
        if isRunning {
            kill(-pid, SIGKILL)
            lock.withLock {
                var status: Int32 = 0
                if !exited { _ = waitpid(pid, &status, 0) }
                exited = true
            }
        }
        return true
    }
}
