import Haul
import HaulIO

// The info view: a task as `list`, `add` and `subscribe` show it.
extension SessionDaemon {
    /// A task as `list` shows it.
    func info(_ task: SessionState.Task) -> TaskInfo {
        let engine = engines[task.id]
        let state = scheduler.listedState(task)
        var directory: String?
        if case .directory(let path) = task.spec.destination { directory = path }
        var info = TaskInfo(id: task.id, state: state, url: task.spec.url, path: task.knownPath, directory: directory,
                            bytes: task.bytes, total: task.total)
        switch task.state {
        case .completed:
            if let completion = task.completion {
                info.bytes = completion.bytes
                info.total = completion.bytes
                info.digest = completion.digest
            }
        case .failed:
            info.failure = task.failure
            fallthrough
        case .queued, .running, .paused:
            if let engine {
                let progress = engine.task.currentProgress
                if Self.engineHasCounted(progress) {
                    info.bytes = progress.bytesDone
                    info.total = progress.total ?? info.total
                }
                if scheduler.slots[task.id]?.phase != .paused {
                    info.bytesPerSecond = Int64(progress.bytesPerSecond.rounded())
                    info.connections = progress.activeConnections
                }
                if info.path == nil, let destination = WorkingFileNames.destination(ofPartial: progress.partialPath) { info.path = destination }
            } else if let path = task.knownPath, let journal = JournalProgress.read(partPath: WorkingFileNames.partial(of: path)) {
                info.bytes = journal.bytes
                info.total = journal.total
            }
        case .cancelled:
            info.bytes = 0
        }
        return info
    }
}
