import Haul
import HaulIO

// Progress pushes to the clients that asked, the part file of a directory task once the server named it,
// and the idle exit.
extension SessionDaemon {
    // MARK: Progress and idling

    func scheduleProgress() {
        loop.scheduleTimer(after: configuration.progressInterval) { [self] in
            guard stopping == nil || !engines.isEmpty else { return }
            reportProgress()
            scheduleProgress()
        }
    }

    func reportProgress() {
        var reports: [TaskProgress] = []
        for (id, engine) in engines.sorted(by: { $0.key < $1.key }) where scheduler.slots[id]?.phase != .paused {
            let progress = engine.task.currentProgress
            reports.append(TaskProgress(id: id, phase: TaskProgress.phaseName(progress.phase), bytes: progress.bytesDone, total: progress.total,
                                        bytesPerSecond: Int64(progress.bytesPerSecond.rounded()), connections: progress.activeConnections,
                                        partialPath: progress.partialPath.isEmpty ? nil : progress.partialPath))
            recordPartFileIfNamed(id, progress)
        }
        guard !reports.isEmpty else { return }
        let line = ProtocolCodec.encode(.progress(reports))
        for client in clients.values where client.wantsProgress {
            if !client.send(line, loop: loop) { drop(client, reason: client.failure) }
        }
    }

    /// A directory task learns its file's name from the server: once the engine has named its `.part`,
    /// its identity is recorded like a `.file` task's is at its start.
    func recordPartFileIfNamed(_ id: Int, _ progress: DownloadProgress) {
        guard let task = state.task(id), task.state == .running, task.spec.filePath == nil,
              let path = WorkingFileNames.destination(ofPartial: progress.partialPath) else { return }
        guard let status = PathStatus.of(progress.partialPath) else { return }
        let part = PartIdentity(path: path, device: status.device, inode: status.inode)
        guard task.part != part else { return }
        commitOrStop([.part(task: id, part)])
    }

    func scheduleIdleCheck() {
        loop.scheduleTimer(after: .seconds(1)) { [self] in
            guard stopping == nil else { return }
            let busy = !clients.isEmpty || hooksRunning > 0 || scheduler.isBusy(state.tasks)
            let now = MonotonicInstant.now()
            if busy { idleSince = now }
            if let limit = configuration.idleExit, !busy,
               now.nanoseconds(since: idleSince) >= UInt64(limit.milliseconds) * 1_000_000 {
                say("idle for \(limit.milliseconds / 1000) s; stopping")
                beginStop(status: 0)
                return
            }
            scheduleIdleCheck()
        }
    }
}
