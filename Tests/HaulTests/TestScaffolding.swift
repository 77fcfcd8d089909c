import Foundation
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul

/// The task's outcome, or nil when it had not ended within `limit` (the task is then cancelled): a download
/// that hangs fails its test instead of holding the whole run. A bound on hanging, not a timing assertion.
func outcomeWithin(_ limit: Duration, of task: DownloadTask) async -> Result<DownloadResult, HaulError>? {
    await withTaskGroup(of: Result<DownloadResult, HaulError>?.self) { group in
        group.addTask { await task.outcome() }
        group.addTask {
            // The deadline (it races the download), not an ordering sleep.
            try? await Task.sleep(for: limit)
            return nil
        }
        let first = await group.next() ?? nil
        group.cancelAll()
        guard first == nil else { return first }
        // The deadline's child came back first. On a pool that the machine starved for longer than the limit,
        // both children can be ready at once and either is taken: a download that has ended is not a hang.
        switch task.currentProgress.phase {
        case .completed, .failed, .cancelled: return await task.outcome()
        default:
            await task.cancel()
            return nil
        }
    }
}

/// Starts `request` on a new client and waits for its end within `limit`; records a test issue (and returns an
/// `unexpected` failure) when it does not end. The task comes back too, for its last progress.
func runToEnd(_ request: DownloadRequest, options: DownloadOptions, within limit: Duration) async throws -> (Result<DownloadResult, HaulError>, DownloadTask) {
    let task = try HaulClient(options: options).start(request)
    guard let result = await outcomeWithin(limit, of: task) else {
        Issue.record("the download did not end within \(limit)")
        return (.failure(.unexpected("test deadline")), task)
    }
    return (result, task)
}

/// Fixtures that live for the whole test run (Swift Testing has no run-wide teardown) register their
/// directories here; they are removed when the test process exits, so a run leaves nothing in /tmp.
enum RunScopedDirectories {
    private static let directories = Mutex<[String]>([])
    private static let registered = Mutex(false)

    static func removeAtExit(_ path: String) {
        directories.withLock { $0.append(path) }
        let first = registered.withLock { registered -> Bool in
            defer { registered = true }
            return !registered
        }
        guard first else { return }
        atexit {
            for path in RunScopedDirectories.directories.withLock({ $0 }) { try? FileManager.default.removeItem(atPath: path) }
        }
    }
}

/// The task's latest snapshot once it is downloading with at least `bytes` written, polled under the
/// default deadline; nil when that never happened (the download ended first, or the deadline passed).
///
/// Polled rather than read from ``DownloadTask/progress``: the stream keeps only the newest snapshot, so a
/// reader that runs late on a busy machine can see `connecting` and then `completed`, never `downloading`.
/// The download itself must not be able to end before the caller acts (a server hold, see
/// `MisbehavingServer.hold(afterBodyBytes:)`); this only waits for the bytes.
func downloading(_ task: DownloadTask, atLeast bytes: Int64) async -> DownloadProgress? {
    var seen: DownloadProgress?
    await eventually {
        let progress = task.currentProgress
        guard progress.phase == .downloading, progress.bytesDone >= bytes else {
            // An ended download will not start again: stop looking.
            return progress.phase == .completed || progress.phase == .failed || progress.phase == .cancelled
        }
        seen = progress
        return true
    }
    return seen
}

/// Runs `body` on a thread of its own and returns what it returns: for a test that must watch something
/// while it happens. The shared cooperative pool promises no such thing on a loaded machine: synchronous tests
/// and heavy fixtures can hold both of its threads for tens of seconds.
func onThreadOfItsOwn<Result: Sendable>(_ body: @escaping @Sendable () -> Result) async -> Result {
    await withCheckedContinuation { continuation in
        let thread = Thread { continuation.resume(returning: body()) }
        thread.name = "test-watcher"
        thread.start()
    }
}
