import Glibc
import SystemPackage

/// Starting other processes without Foundation: the daemon in the background, and completion hooks.
package enum ChildProcesses {
    /// glibc's `POSIX_SPAWN_SETSID` (a GNU extension, not in Glibc's Swift module): the child starts a new
    /// session, so it has no controlling terminal and a Ctrl-C in the client's terminal never reaches it.
    private static let spawnSetSessionID: Int16 = 0x80

    /// Starts `arguments[0]` (an absolute path) with `arguments`, stdin from `/dev/null`, stdout and stderr
    /// appended to `outputPath` (or this process's, when nil), and `environment` added to this process's;
    /// in a new session when `newSession`. Returns its pid; the caller reaps it.
    /// `standardOutput`, when given, is the child's stdout instead (stderr stays this process's); with
    /// `newProcessGroup` the child leads a process group of its own, so that it and its children can be
    /// signalled together (``run(_:environment:timeout:outputLimit:)``).
    package static func spawn(_ arguments: [String], environment extra: [String: String] = [:], outputPath: String?,
                      newSession: Bool, standardOutput: CInt? = nil, newProcessGroup: Bool = false) throws(SystemError) -> pid_t {
        // The posix_spawn family returns an error number rather than setting errno: each one is checked.
        var actions = posix_spawn_file_actions_t()
        try checkErrorNumber("posix_spawn_file_actions_init", posix_spawn_file_actions_init(&actions))
        defer { posix_spawn_file_actions_destroy(&actions) }
        try checkErrorNumber("posix_spawn_file_actions_addopen", posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0))
        if let outputPath {
            try checkErrorNumber("posix_spawn_file_actions_addopen",
                                 posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_APPEND, 0o600))
            try checkErrorNumber("posix_spawn_file_actions_adddup2", posix_spawn_file_actions_adddup2(&actions, 1, 2))
        }
        if let standardOutput {
            try checkErrorNumber("posix_spawn_file_actions_adddup2", posix_spawn_file_actions_adddup2(&actions, standardOutput, 1))
        }
        var attributes = posix_spawnattr_t()
        try checkErrorNumber("posix_spawnattr_init", posix_spawnattr_init(&attributes))
        defer { posix_spawnattr_destroy(&attributes) }
        // Signals the parent ignores (SIGPIPE) stay ignored in the child unless reset.
        var defaults = sigset_t()
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        sigaddset(&defaults, SIGINT)
        sigaddset(&defaults, SIGTERM)
        try checkErrorNumber("posix_spawnattr_setsigdefault", posix_spawnattr_setsigdefault(&attributes, &defaults))
        var mask = sigset_t()
        sigemptyset(&mask)
        try checkErrorNumber("posix_spawnattr_setsigmask", posix_spawnattr_setsigmask(&attributes, &mask))
        var flags = Int16(POSIX_SPAWN_SETSIGDEF) | Int16(POSIX_SPAWN_SETSIGMASK)
        if newSession { flags |= spawnSetSessionID }
        if newProcessGroup {
            flags |= Int16(POSIX_SPAWN_SETPGROUP)
            try checkErrorNumber("posix_spawnattr_setpgroup", posix_spawnattr_setpgroup(&attributes, 0))
        }
        try checkErrorNumber("posix_spawnattr_setflags", posix_spawnattr_setflags(&attributes, flags))

        var environment: [String] = []
        var index = 0
        while let entry = environ[index] {
            let text = String(cString: entry)
            let name = text.split(separator: "=", maxSplits: 1).first.map(String.init) ?? text
            if extra[name] == nil { environment.append(text) }
            index += 1
        }
        for (name, value) in extra.sorted(by: { $0.key < $1.key }) { environment.append("\(name)=\(value)") }

        let argv = arguments.map { strdup($0) } + [nil]
        let envp = environment.map { strdup($0) } + [nil]
        defer {
            argv.forEach { free($0) }
            envp.forEach { free($0) }
        }
        var pid = pid_t()
        try checkErrorNumber("posix_spawn", posix_spawn(&pid, arguments[0], &actions, &attributes, argv, envp))
        return pid
    }

    /// Waits for `pid` to end (blocking: call it off the loop and off the cooperative pool); returns its
    /// exit status, or 128 + N when signal N killed it.
    package static func wait(for pid: pid_t) -> Int32 {
        var status: Int32 = 0
        // Retried on EINTR; any other failure (the child was reaped elsewhere: ECHILD) leaves no status to
        // report, which reads as 255.
        do { _ = try blockingSyscall("waitpid") { waitpid(pid, &status, 0) } } catch { return 255 }
        // WIFEXITED / WEXITSTATUS / WTERMSIG, which are macros Swift cannot import.
        let signal = status & 0x7F
        return signal == 0 ? (status >> 8) & 0xFF : 128 + signal
    }

    /// The path of this process's executable (`/proc/self/exe`).
    package static func currentExecutable() -> String? {
        var buffer = [CChar](repeating: 0, count: Int(PATH_MAX) + 1)
        let count = readlink("/proc/self/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        return String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Marks every descriptor from 3 up close-on-exec, so that a daemon started from here inherits none of
    /// this process's files (a pipe of whoever ran the client would otherwise stay open in it for good).
    package static func closeInheritedDescriptorsOnExec() {
        let directory = opendir("/proc/self/fd")
        guard let directory else { return }
        var descriptors: [FileDescriptor] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
            }
            if let number = CInt(name), number > 2 { descriptors.append(FileDescriptor(rawValue: number)) }
        }
        closedir(directory)
        for descriptor in descriptors {
            // The listing includes the directory's own descriptor, closed by now (EBADF): a descriptor that
            // is gone needs no flag, and there is nothing else a failure here could be.
            guard let flags = try? blockingSyscall("fcntl(F_GETFD)", { fcntl(descriptor.rawValue, F_GETFD) }) else { continue }
            _ = try? blockingSyscall("fcntl(F_SETFD)") { fcntl(descriptor.rawValue, F_SETFD, flags | FD_CLOEXEC) }
        }
    }
}
