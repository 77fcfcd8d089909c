import Glibc
import Haul
import HaulIO

// Completion hooks: run once per completed task, even across restarts (`docs/sessions.md`, "Hooks").
extension SessionDaemon {
    // MARK: Hooks

    func runHook(_ id: Int, command: String) {
        guard let task = state.task(id), let completion = task.completion else { return }
        guard commitOrStop([.hookStarted(task: id)]) else { return }
        let environment = [
            "HAUL_SESSION": paths.identifier, "HAUL_TASK_ID": String(id), "HAUL_PATH": completion.path,
            "HAUL_BYTES": String(completion.bytes), "HAUL_DIGEST": completion.digest, "HAUL_URL": task.spec.url,
            "HAUL_EVENT_SEQ": String(completion.sequence),
        ]
        let pid: pid_t
        do {
            pid = try ChildProcesses.spawn(["/bin/sh", "-c", command], environment: environment, outputPath: nil, newSession: false)
        } catch {
            say("task \(id): cannot run its hook: \(error)")
            commitOrStop([.event(event(id, .hook(status: 127)), spec: nil, part: nil)])
            return
        }
        hooksRunning += 1
        BlockingWork.start { [self] in
            let status = ChildProcesses.wait(for: pid)
            loop.execute { [self] in
                hooksRunning -= 1
                commitOrStop([.event(event(id, .hook(status: status)), spec: nil, part: nil)])
                continueStop()
            }
        }
    }
}
