import Glibc
import Haul
import HaulIO

// The daemon's answers to requests: add, list, remove, pause, resume, cancel, events, subscribe,
// acknowledge, stop.
extension SessionDaemon {
    func handle(_ request: SessionRequest, id: Int64, from client: DaemonConnection) {
        let respond = { [self] (result: Result<ReplyBody, RemoteFailure>) in reply(client, id, result) }
        if stopping != nil {
            switch request {
            case .hello, .list, .events, .stop: break
            default: return respond(.failure(RemoteFailure(code: "stopping", message: "the daemon is stopping")))
            }
        }
        switch request {
        case .hello(let version):
            // Answered whatever the client speaks, naming this daemon: the client refuses another version
            // (`SessionProtocol.helloRefusal`). A client of protocol 1 cannot read this answer's new fields:
            // it is refused in the words it reads.
            let speaks = configuration.protocolVersion
            let executable = ChildProcesses.currentExecutable()
            if version != speaks, version < 2 {
                return respond(.failure(RemoteFailure(
                    code: "unsupported-protocol",
                    message: "this daemon speaks protocol \(speaks) (Haul \(SessionProtocol.haulVersion), \(executable ?? "executable unknown")), not \(version)")))
            }
            var body = ReplyBody()
            body.protocolVersion = speaks
            body.haulVersion = SessionProtocol.haulVersion
            body.executable = executable
            body.session = paths.identifier
            body.pid = getpid()
            body.sequence = state.lastSequence
            respond(.success(body))
        case .add(let spec):
            if let problem = spec.problem() { return respond(.failure(.badRequest(problem))) }
            let id = state.nextTaskID
            let added: SessionEvent.Kind
            switch spec.destination {
            case .file(let path): added = .added(url: spec.url, path: path, directory: nil)
            case .directory(let directory): added = .added(url: spec.url, path: nil, directory: directory)
            // Refused by `problem()` above, with its reason; here only for the switch to be exhaustive.
            case .stream, .memory: return respond(.failure(.badRequest(spec.problem() ?? "this destination cannot be queued")))
            }
            let record = LogRecord.event(event(id, added), spec: spec, part: nil)
            guard record.payload.count <= SessionLogCodec.maximumPayload else {
                return respond(.failure(.badRequest("the task is \(record.payload.count) bytes as a log record; at most \(SessionLogCodec.maximumPayload)")))
            }
            do {
                try commit([record])
            } catch {
                return respond(.failure(RemoteFailure(code: "store", message: error.description)))
            }
            var body = ReplyBody()
            body.task = info(state.task(id)!)
            body.sequence = state.lastSequence
            respond(.success(body))
            schedule()
        case .list(let ids):
            if let unknown = ids?.first(where: { listedTask($0) == nil }) { return respond(.failure(unknownTask(unknown))) }
            respond(.success(listing(ids)))
        case .remove(let ids):
            if let unknown = ids.first(where: { listedTask($0) == nil }) { return respond(.failure(unknownTask(unknown))) }
            if let live = ids.compactMap({ listedTask($0) }).first(where: { !$0.state.hasEnded }) {
                return respond(.failure(RemoteFailure(code: "not-ended", message: "task \(live.id) is \(info(live).state.rawValue), not ended; cancel it first")))
            }
            for taskID in Array(Set(ids)).sorted() {
                do { try commit([.event(event(taskID, .removed), spec: nil, part: nil)]) } catch {
                    return respond(.failure(RemoteFailure(code: "store", message: error.description)))
                }
            }
            respond(.success(listing(nil)))
        case .pause(let ids), .resume(let ids), .cancel(let ids):
            if let unknown = ids.first(where: { listedTask($0) == nil }) { return respond(.failure(unknownTask(unknown))) }
            let unique = Array(Set(ids)).sorted()
            var remaining = unique.count + 1
            var failure: RemoteFailure?
            let done = { [self] (problem: RemoteFailure?) in
                if failure == nil { failure = problem }
                remaining -= 1
                guard remaining == 0 else { return }
                if let failure { return respond(.failure(failure)) }
                respond(.success(listing(ids)))
            }
            for taskID in unique {
                switch request {
                case .pause: pause(taskID, done)
                case .resume: resume(taskID, done)
                default: cancel(taskID, done)
                }
            }
            done(nil)
            schedule()
        case .events(let after, let limit):
            let events = state.events(after: after)
            var body = ReplyBody()
            body.events = Array(events.prefix(limit))
            body.more = events.count > limit
            body.sequence = state.lastSequence
            respond(.success(body))
        case .subscribe(let after, let consumer, let progress):
            let start = after ?? consumer.map { state.acknowledgements[$0] ?? 0 } ?? state.lastSequence
            var body = listing(nil)
            body.after = min(start, state.lastSequence)
            client.wantsProgress = progress
            // The reply, then the events already in the log after `start`, then live ones as they are committed.
            client.busy = false
            guard client.send(ProtocolCodec.encode(.reply(id: id, .success(body))), loop: loop) else {
                return drop(client, reason: client.failure)
            }
            for event in state.events(after: start) {
                guard client.send(ProtocolCodec.encode(.event(event)), loop: loop) else { return drop(client, reason: client.failure) }
            }
            client.pushedThrough = state.lastSequence
            process(client)
        case .acknowledge(let consumer, let sequence):
            guard sequence <= state.lastSequence else {
                return respond(.failure(.badRequest("event \(sequence) does not exist yet (the latest is \(state.lastSequence))")))
            }
            if let previous = state.acknowledgements[consumer], previous >= sequence { return respond(.success(ReplyBody())) }
            do { try commit([.acknowledged(consumer: consumer, sequence: sequence)]) } catch {
                return respond(.failure(RemoteFailure(code: "store", message: error.description)))
            }
            respond(.success(ReplyBody()))
        case .stop:
            say("stop requested by process \(client.peer.pid)")
            // Answered once the daemon has stopped, just before it exits.
            beginStop(status: 0, reply: (client, id))
        }
    }

    func unknownTask(_ id: Int) -> RemoteFailure {
        RemoteFailure(code: "unknown-task", message: "no task \(id) in session \(paths.identifier)")
    }

    func listing(_ ids: [Int]?) -> ReplyBody {
        var body = ReplyBody()
        body.sequence = state.lastSequence
        body.tasks = (ids ?? state.tasks.map(\.id)).compactMap { listedTask($0) }.map(info)
        return body
    }

    /// Task `id` as clients know it: nil when there is none, or it was removed.
    func listedTask(_ id: Int) -> SessionState.Task? {
        guard let task = state.task(id), !task.removed else { return nil }
        return task
    }

    private func pause(_ id: Int, _ done: @escaping (RemoteFailure?) -> Void) {
        let task = state.task(id)
        switch scheduler.pause(id, taskState: task?.state) {
        case .none:
            done(nil)
        case .recordFromJournal:
            guard let task else { return done(nil) }
            let progress = task.knownPath.flatMap { JournalProgress.read(partPath: WorkingFileNames.partial(of: $0)) } ?? (task.bytes, task.total)
            do { try commit([.event(event(id, .paused(bytes: progress.bytes, total: progress.total)), spec: nil, part: nil)]) } catch {
                return done(RemoteFailure(code: "store", message: error.description))
            }
            done(nil)
        case .recordHeld:
            // Held paused in this process after a resume that has not started yet.
            guard let engine = engines[id] else { return done(nil) }
            let progress = engine.task.currentProgress
            commitOrStop([.event(event(id, .paused(bytes: progress.bytesDone, total: progress.total)), spec: nil, part: nil)])
            done(nil)
        case .waitForOutcome:
            whenSettled(id) { done(nil) }
        case .pauseEngine:
            whenSettled(id) { done(nil) }
            guard let engine = engines[id] else { return }
            Task { [self] in
                try? await engine.task.pause()
                loop.execute { [self] in enginePaused(id, engine) }
            }
        }
    }

    private func resume(_ id: Int, _ done: @escaping (RemoteFailure?) -> Void) {
        guard SessionScheduler.resumes(taskState: state.task(id)?.state) else { return done(nil) }
        do { try commit([.event(event(id, .resumed), spec: nil, part: nil)]) } catch {
            return done(RemoteFailure(code: "store", message: error.description))
        }
        done(nil)
    }

    private func cancel(_ id: Int, _ done: @escaping (RemoteFailure?) -> Void) {
        let task = state.task(id)
        switch scheduler.cancel(id, taskState: task?.state) {
        case .none:
            done(nil)
        case .waitForOutcome:
            whenSettled(id) { done(nil) }
        case .cancelEngine:
            whenSettled(id) { done(nil) }
            guard let engine = engines[id] else { return }
            Task { [self] in
                await engine.task.cancel()
                loop.execute { [self] in engineEnded(id, engine, .failure(HaulError(.cancelled))) }
            }
        case .removeFiles:
            whenSettled(id) { done(nil) }
            let paths = task?.knownPath.map(WorkingFileNames.all(of:)) ?? []
            BlockingWork.start { [self] in
                let problems = paths.compactMap { path -> String? in
                    do { try OutputFile.remove(path) } catch { return "\(path): \(error)" }
                    return nil
                }
                loop.execute { [self] in
                    for problem in problems { say("task \(id): cannot remove \(problem)") }
                    if scheduler.filesRemoved(id, taskState: state.task(id)?.state) {
                        commitOrStop([.event(event(id, .cancelled), spec: nil, part: nil)])
                    }
                    taskSettled(id)
                }
            }
        }
    }
}
