@testable import Haul

/// The task's outcome, or nil when it had not ended within `limit` (the task is then cancelled): a download
/// that hangs fails its test instead of holding the whole run. A bound on hanging, not a timing assertion.
func outcomeWithin(_ limit: Duration, of task: DownloadTask) async -> Result<DownloadResult, HaulError>? {
    await withTaskGroup(of: Result<DownloadResult, HaulError>?.self) { group in
        group.addTask { await task.outcome() }
        group.addTask {
            try? await Task.sleep(for: limit)
            return nil
        }
        let first = await group.next() ?? nil
        if first == nil { await task.cancel() }
        group.cancelAll()
        return first
    }
}
