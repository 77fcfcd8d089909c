import Haul
import Testing
@testable import HaulSessions

/// The daemon's decisions without sockets, engines or files: scripted inputs to ``SessionScheduler``, one
/// test per decision, as AsyncHTTPClient tests its state machines.
@Suite struct SessionSchedulerTests {
    /// A session whose tasks have `connections` each, queued in order; tasks in `running` have started.
    static func state(connections: [Int], running: Set<Int> = []) throws -> SessionState {
        var state = SessionState()
        var sequence: UInt64 = 0
        func append(_ task: Int, _ kind: SessionEvent.Kind, spec: TaskSpec? = nil) throws {
            sequence += 1
            try state.apply(.event(SampleLog.event(sequence, task, kind), spec: spec, part: nil))
        }
        for (index, count) in connections.enumerated() {
            var spec = TaskSpec(url: "http://h/\(index + 1)", destination: .file("/data/\(index + 1)"))
            spec.options.connections = count
            try append(index + 1, .added(url: spec.url, path: "/data/\(index + 1)", directory: nil), spec: spec)
        }
        for id in running.sorted() { try append(id, .started(bytes: 0, total: nil)) }
        return state
    }

    static func settings(jobs: Int, connections: Int) -> SessionSettings {
        SessionSettings(jobs: jobs, maximumConnections: connections)
    }

    // MARK: Which queued task starts next

    @Test func decisionStartsQueuedTasksOldestFirstUpToJobs() throws {
        let state = try Self.state(connections: [2, 2, 2, 2])
        let scheduler = SessionScheduler()
        #expect(scheduler.startsDue(state.tasks, settings: Self.settings(jobs: 2, connections: 64))
            == [.new(id: 1, connections: 2), .new(id: 2, connections: 2)])
    }

    @Test func decisionStopsAtTheConnectionCapButAlwaysRunsOneTask() throws {
        let state = try Self.state(connections: [8, 8, 2])
        let scheduler = SessionScheduler()
        // 8 + 8 > 12: the second waits, and so does everything behind it (oldest first, no overtaking).
        #expect(scheduler.startsDue(state.tasks, settings: Self.settings(jobs: 4, connections: 12)) == [.new(id: 1, connections: 8)])
        // A cap below one task's own count: the task runs alone with the cap's connections.
        #expect(scheduler.startsDue(state.tasks, settings: Self.settings(jobs: 4, connections: 4)) == [.new(id: 1, connections: 4)])
    }

    @Test func decisionCountsRunningEnginesAndSkipsThem() throws {
        let state = try Self.state(connections: [2, 2, 2], running: [1])
        var scheduler = SessionScheduler()
        scheduler.started(.new(id: 1, connections: 2))
        #expect(scheduler.startsDue(state.tasks, settings: Self.settings(jobs: 2, connections: 64)) == [.new(id: 2, connections: 2)])
    }

    @Test func decisionContinuesAHeldPausedEngineInsteadOfStartingANewOne() throws {
        let state = try Self.state(connections: [2, 2])
        var scheduler = SessionScheduler()
        scheduler.started(.new(id: 1, connections: 2))
        let step1 = scheduler.pause(1, taskState: .running)
        #expect(step1 == .pauseEngine)
        let step2 = scheduler.engineEnded(1, .paused, taskState: .running)
        #expect(step2 == .recordPaused)
        // A held engine neither runs nor counts against the limits; once the task is queued again it continues.
        #expect(scheduler.startsDue(state.tasks, settings: Self.settings(jobs: 1, connections: 64)) == [.continueHeld(id: 1)])
        scheduler.started(.continueHeld(id: 1))
        #expect(scheduler.slots[1]?.phase == .active)
        #expect(scheduler.startsDue(state.tasks, settings: Self.settings(jobs: 1, connections: 64)).isEmpty)
    }

    @Test func decisionStartsNothingWhileStoppingOrForATaskBeingCancelled() throws {
        let state = try Self.state(connections: [2, 2])
        var scheduler = SessionScheduler()
        let step3 = scheduler.cancel(1, taskState: .queued)
        #expect(step3 == .removeFiles)
        #expect(scheduler.startsDue(state.tasks, settings: Self.settings(jobs: 4, connections: 64)) == [.new(id: 2, connections: 2)])
        _ = scheduler.beginStop()
        #expect(scheduler.startsDue(state.tasks, settings: Self.settings(jobs: 4, connections: 64)).isEmpty)
    }

    // MARK: What an engine's outcome does

    @Test func decisionACompletionComputesTheDigestAndHoldsAStopUntilRecorded() {
        var scheduler = SessionScheduler()
        scheduler.started(.new(id: 1, connections: 4))
        let step4 = scheduler.engineEnded(1, .completed, taskState: .running)
        #expect(step4 == .computeDigest)
        #expect(scheduler.slots[1]?.phase == .finishing)
        _ = scheduler.beginStop()
        #expect(!scheduler.stopMayFinish(pausesLeft: 0), "a completion being recorded holds the stop")
        scheduler.completionRecorded(1)
        #expect(scheduler.stopMayFinish(pausesLeft: 0))
        #expect(!scheduler.stopMayFinish(pausesLeft: 1))
    }

    @Test func decisionAFailureIsRecordedTypedAndAnEmptyPartTheDaemonMadeGoes() {
        var scheduler = SessionScheduler()
        scheduler.started(.new(id: 1, connections: 4), createdPart: true)
        let notFound = HaulError(.httpStatus(status: 404, reason: "Not Found", url: "http://h/1"), url: "http://h/1")
        guard case .recordFailure(let failure, let removeEmptyPart) = scheduler.engineEnded(1, .failed(notFound, bytesWritten: 0), taskState: .running)
        else { Issue.record("not a failure"); return }
        #expect(failure.httpStatus == 404 && failure.failureClass == .http && failure.exitCode == 5)
        #expect(removeEmptyPart)
        #expect(scheduler.slots[1] == nil)

        // Bytes written, or another download's part: kept.
        scheduler.started(.new(id: 2, connections: 4), createdPart: true)
        let step5 = scheduler.engineEnded(2, .failed(notFound, bytesWritten: 10), taskState: .running)
        #expect(step5
            == .recordFailure(TaskFailure(notFound), removeEmptyPart: false))
        scheduler.started(.new(id: 3, connections: 4), createdPart: true)
        let busy = HaulError(.destinationBusy(path: "/data/3", holder: 7))
        let step6 = scheduler.engineEnded(3, .failed(busy, bytesWritten: 0), taskState: .running)
        #expect(step6
            == .recordFailure(TaskFailure(busy), removeEmptyPart: false))
        // A task that has ended meanwhile records nothing more.
        scheduler.started(.new(id: 4, connections: 4))
        let step7 = scheduler.engineEnded(4, .failed(notFound, bytesWritten: 0), taskState: .cancelled)
        #expect(step7 == .forget)
    }

    @Test func decisionACancelledEngineRecordsACancelOnlyWhenAClientAskedForIt() {
        var scheduler = SessionScheduler()
        scheduler.started(.new(id: 1, connections: 4))
        scheduler.started(.new(id: 2, connections: 4))
        let step8 = scheduler.cancel(1, taskState: .running)
        #expect(step8 == .cancelEngine)
        let cancelled = HaulError(.cancelled)
        let step9 = scheduler.engineEnded(1, .failed(cancelled, bytesWritten: 5), taskState: .running)
        #expect(step9 == .recordCancelled)
        // Cancelled by a stop: the task runs again with the next daemon.
        let step10 = scheduler.engineEnded(2, .failed(cancelled, bytesWritten: 5), taskState: .running)
        #expect(step10 == .forget)
        // A late outcome of an engine that is gone does nothing.
        let step11 = scheduler.engineEnded(2, .completed, taskState: .running)
        #expect(step11 == .none)
    }

    /// A client cancels while the engine completes: the cancel reaches a finished download, and the completion
    /// (the file is whole at its destination) settles the task, never a cancel record beside a finished file.
    @Test func decisionACancelThatLosesTheRaceToACompletionRecordsNothing() {
        var scheduler = SessionScheduler()
        scheduler.started(.new(id: 1, connections: 4))
        let cancel = scheduler.cancel(1, taskState: .running)
        #expect(cancel == .cancelEngine)
        let completed = scheduler.engineEnded(1, .completed, taskState: .running)
        #expect(completed == .computeDigest)
        let lateCancel = scheduler.engineEnded(1, .failed(HaulError(.cancelled), bytesWritten: 10), taskState: .running)
        #expect(lateCancel == .none)
        #expect(scheduler.slots[1]?.phase == .finishing, "the completion is still to be recorded")
    }

    @Test func decisionAPauseIsRecordedOnlyWhenAskedAndStillActive() {
        var scheduler = SessionScheduler()
        scheduler.started(.new(id: 1, connections: 4))
        let step12 = scheduler.engineEnded(1, .paused, taskState: .running)
        #expect(step12 == .none, "nobody asked")
        let step13 = scheduler.pause(1, taskState: .running)
        #expect(step13 == .pauseEngine)
        let step14 = scheduler.engineEnded(1, .paused, taskState: .running)
        #expect(step14 == .recordPaused)
        let step15 = scheduler.pause(1, taskState: .queued)
        #expect(step15 == .recordHeld, "held paused after a resume that has not started")
        let step16 = scheduler.pause(2, taskState: .queued)
        #expect(step16 == .recordFromJournal, "no engine")
        let step17 = scheduler.pause(2, taskState: .completed)
        #expect(step17 == .none)
        scheduler.started(.new(id: 3, connections: 4))
        _ = scheduler.engineEnded(3, .completed, taskState: .running)
        let step18 = scheduler.pause(3, taskState: .running)
        #expect(step18 == .waitForOutcome, "finishing: the completion answers")
    }

    @Test func decisionACancelWithoutEngineRemovesFilesOnceThenRecords() {
        var scheduler = SessionScheduler()
        let step19 = scheduler.cancel(1, taskState: .paused)
        #expect(step19 == .removeFiles)
        let step20 = scheduler.cancel(1, taskState: .paused)
        #expect(step20 == .waitForOutcome, "already removing")
        _ = scheduler.beginStop()
        #expect(!scheduler.stopMayFinish(pausesLeft: 0), "files being removed hold the stop")
        let step21 = scheduler.filesRemoved(1, taskState: .paused)
        #expect(step21)
        #expect(scheduler.stopMayFinish(pausesLeft: 0))
        let step22 = scheduler.cancel(2, taskState: .completed)
        #expect(step22 == .none)
        let step23 = scheduler.filesRemoved(2, taskState: .cancelled)
        #expect(!step23)
    }

    @Test func decisionOnlyPausedOrFailedTasksResume() {
        #expect(SessionScheduler.resumes(taskState: .paused) && SessionScheduler.resumes(taskState: .failed))
        for state: TaskState? in [.queued, .running, .completed, .cancelled, nil] { #expect(!SessionScheduler.resumes(taskState: state)) }
    }

    @Test func decisionAStopPausesActiveEnginesOnly() {
        var scheduler = SessionScheduler()
        scheduler.started(.new(id: 1, connections: 2))
        scheduler.started(.new(id: 2, connections: 2))
        scheduler.started(.new(id: 3, connections: 2))
        _ = scheduler.pause(2, taskState: .running)
        _ = scheduler.engineEnded(2, .paused, taskState: .running)
        _ = scheduler.engineEnded(3, .completed, taskState: .running)
        let step24 = scheduler.beginStop()
        #expect(step24 == [1])
        #expect(scheduler.isStopping)
    }

    // MARK: Views and recovery

    @Test func decisionListShowsARunningTaskWithoutActiveEngineAsQueued() throws {
        let state = try Self.state(connections: [2, 2], running: [1, 2])
        var scheduler = SessionScheduler()
        scheduler.started(.new(id: 1, connections: 2))
        #expect(scheduler.listedState(state.task(1)!) == .running)
        #expect(scheduler.listedState(state.task(2)!) == .queued)
        #expect(scheduler.isBusy(state.tasks))
    }

    @Test func decisionRecoveryRecognisesTheFinishedFileByItsPartsInode() throws {
        var state = SessionState()
        let spec = TaskSpec(url: "http://h/a", destination: .file("/data/a"))
        try state.apply(.event(SampleLog.event(1, 1, .added(url: spec.url, path: "/data/a", directory: nil)), spec: spec, part: nil))
        let task0 = state.task(1)!
        let file = SessionScheduler.FileFacts(isRegularFile: true, device: 1, inode: 77, size: 10)
        #expect(!SessionScheduler.completedBeforeRestart(task0, destination: file, partialExists: false), "never started")
        try state.apply(.event(SampleLog.event(2, 1, .started(bytes: 0, total: nil)), spec: nil,
                               part: PartIdentity(path: "/data/a", device: 1, inode: 77)))
        let task = state.task(1)!
        #expect(SessionScheduler.completedBeforeRestart(task, destination: file, partialExists: false))
        #expect(!SessionScheduler.completedBeforeRestart(task, destination: file, partialExists: true), "a .part is left")
        var other = file
        other.inode = 78
        #expect(!SessionScheduler.completedBeforeRestart(task, destination: other, partialExists: false), "another file")
        other = file
        other.isRegularFile = false
        #expect(!SessionScheduler.completedBeforeRestart(task, destination: other, partialExists: false))
        #expect(!SessionScheduler.completedBeforeRestart(task, destination: nil, partialExists: false))
    }
}
