import CHaulSystem
import Glibc

/// Starts OS threads without Foundation, for work that must never run on Swift's cooperative pool
/// (the event loop, blocking `getaddrinfo`).
package enum PosixThread {
    /// How many processors are online (`sysconf(_SC_NPROCESSORS_ONLN)`), at least 1: how many threads can
    /// run at once.
    package static var onlineProcessors: Int {
        max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN)))
    }

    private final class Entry {
        let name: String
        let body: () -> Void
        init(name: String, _ body: @escaping () -> Void) {
            self.name = name
            self.body = body
        }
    }

    /// Starts a joinable thread running `body`; the caller must `pthread_join` it.
    static func spawn(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) -> pthread_t {
        try start(name: name, detached: false, body)
    }

    /// Starts a thread that cleans up after itself when `body` returns.
    package static func spawnDetached(name: String, _ body: @escaping @Sendable () -> Void) throws(SystemError) {
        _ = try start(name: name, detached: true, body)
    }

    private static func start(name: String, detached: Bool, _ body: @escaping @Sendable () -> Void) throws(SystemError) -> pthread_t {
        let entry = Unmanaged.passRetained(Entry(name: name, body)).toOpaque()
        var attributes = pthread_attr_t()
        pthread_attr_init(&attributes)
        defer { pthread_attr_destroy(&attributes) }
        if detached { pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED)) }
        var thread = pthread_t()
        do {
            try checkErrorNumber("pthread_create", pthread_create(&thread, &attributes, { argument in
                let entry = Unmanaged<Entry>.fromOpaque(argument!).takeRetainedValue()
                // The thread names itself: a detached thread may be gone (and its handle reused) before the
                // creator could name it. Linux allows 15 bytes plus the terminator.
                _ = haul_set_thread_name(pthread_self(), String(entry.name.prefix(15)))
                entry.body()
                return nil
            }, entry))
        } catch {
            Unmanaged<Entry>.fromOpaque(entry).release()
            throw error
        }
        return thread
    }
}
