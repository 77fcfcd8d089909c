/// Runs blocking work (hashing a large file, `fdatasync`) on a thread of its own, so that it stalls neither
/// the event loop nor Swift concurrency's cooperative pool.
public enum BlockingWork {
    /// Starts `body` on a new OS thread and returns at once (the caller hears back however `body` reports,
    /// for example through ``EventLoop/execute(_:)``).
    public static func start(name: String, _ body: @escaping @Sendable () -> Void) {
        do {
            try PosixThread.spawnDetached(name: name, body)
        } catch {
            body()
        }
    }

    /// Runs `body` on a new OS thread and returns its result.
    public static func run<Value: Sendable, Failure: Error>(
        name: String, _ body: @escaping @Sendable () throws(Failure) -> Value
    ) async throws(Failure) -> Value {
        let result: Result<Value, Failure> = await withCheckedContinuation { continuation in
            do {
                try PosixThread.spawnDetached(name: name) {
                    continuation.resume(returning: Result { () throws(Failure) in try body() })
                }
            } catch {
                // No thread could be started: run here rather than fail the download over it.
                continuation.resume(returning: Result { () throws(Failure) in try body() })
            }
        }
        return try result.get()
    }
}
