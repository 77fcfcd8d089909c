import Testing
@testable import Haul

/// Every request at every stage of ``DownloadLifecycle``, with a string for the running download.
struct DownloadLifecycleTests {
    typealias Lifecycle = DownloadLifecycle<String>

    /// A lifecycle at `stage`, reached the way a download reaches it.
    func lifecycle(at stage: String) -> Lifecycle {
        var lifecycle = Lifecycle()
        switch stage {
        case "preparing": break
        case "running": _ = lifecycle.prepared(succeeded: true); lifecycle.started("run")
        case "paused": _ = lifecycle.prepared(succeeded: true); lifecycle.started("run"); _ = lifecycle.pause(); _ = lifecycle.runPaused()
        case "finishing": _ = lifecycle.prepared(succeeded: true); lifecycle.started("run"); lifecycle.finishing()
        case "ended": lifecycle.ended()
        default: Issue.record("no stage \(stage)")
        }
        return lifecycle
    }

    func name(_ stage: Lifecycle.Stage) -> String {
        switch stage {
        case .preparing: "preparing"
        case .running: "running"
        case .finishing: "finishing"
        case .paused: "paused"
        case .ended: "ended"
        }
    }

    @Test func aPlainRunGoesFromPreparingToEnded() {
        var lifecycle = Lifecycle()
        #expect(name(lifecycle.stage) == "preparing" && lifecycle.run == nil)
        #expect(lifecycle.prepared(succeeded: true) == .run)
        lifecycle.started("run")
        #expect(lifecycle.run == "run")
        lifecycle.finishing()
        #expect(name(lifecycle.stage) == "finishing" && lifecycle.run == nil)
        lifecycle.ended()
        #expect(name(lifecycle.stage) == "ended")
    }

    @Test func aFailedPreparationEndsWhateverWasPending() {
        for request in ["none", "pause", "stop", "cancel"] {
            var lifecycle = Lifecycle()
            switch request {
            case "pause": _ = lifecycle.pause()
            case "stop": _ = lifecycle.stop()
            case "cancel": _ = lifecycle.cancel()
            default: break
            }
            #expect(lifecycle.prepared(succeeded: false) == .fail, "pending \(request)")
        }
    }

    @Test func requestsWhilePreparingTakeEffectWhenItEnds() {
        var pausing = Lifecycle()
        guard case .wait(pausing: nil) = pausing.pause() else { Issue.record("pause while preparing waits"); return }
        #expect(pausing.pending == .pause)
        #expect(pausing.prepared(succeeded: true) == .paused)
        #expect(pausing.isPaused && pausing.pending == .none)

        var stopping = Lifecycle()
        guard case .nothing = stopping.stop() else { Issue.record("a stop while preparing has nothing to tell yet"); return }
        #expect(stopping.prepared(succeeded: true) == .endCancelled)

        var cancelling = Lifecycle()
        guard case .wait(cancelling: nil) = cancelling.cancel() else { Issue.record("cancel while preparing waits"); return }
        #expect(cancelling.prepared(succeeded: true) == .removeFiles)
        #expect(name(cancelling.stage) == "finishing")
    }

    @Test func aResumeWhilePreparingWithdrawsAPendingPauseOnly() {
        var paused = Lifecycle()
        _ = paused.pause()
        guard case .waitForLaunch = paused.resume() else { Issue.record("resume while preparing waits"); return }
        #expect(paused.pending == .none)
        #expect(paused.prepared(succeeded: true) == .run)

        var cancelled = Lifecycle()
        _ = cancelled.cancel()
        _ = cancelled.resume()
        #expect(cancelled.pending == .cancel, "a resume never undoes a cancel")
        _ = cancelled.stop()
        #expect(cancelled.pending == .cancel, "nor does a stop weaken it")
        _ = cancelled.pause()
        #expect(cancelled.pending == .cancel, "nor a pause")
    }

    @Test func requestsWhileRunningTellTheRunAndWaitForItToStop() {
        var lifecycle = lifecycle(at: "running")
        guard case .wait(pausing: "run") = lifecycle.pause() else { Issue.record("a pause tells the run"); return }
        #expect(lifecycle.runPaused() == .paused)
        #expect(lifecycle.isPaused)

        var stopped = self.lifecycle(at: "running")
        guard case .pauseRun("run") = stopped.stop() else { Issue.record("a stop pauses the run"); return }
        #expect(stopped.runPaused() == .endCancelled)

        var pausedThenStopped = self.lifecycle(at: "running")
        _ = pausedThenStopped.pause()
        _ = pausedThenStopped.stop()
        #expect(pausedThenStopped.runPaused() == .endCancelled, "a stop overrides a pause")

        var cancelled = self.lifecycle(at: "running")
        guard case .wait(cancelling: "run") = cancelled.cancel() else { Issue.record("a cancel tells the run"); return }
        // The run may still report a pause it was stopping for: the cancel wins.
        #expect(cancelled.runPaused() == .removeFiles)
        #expect(name(cancelled.stage) == "finishing")

        var resumed = self.lifecycle(at: "running")
        guard case .alreadyRunning = resumed.resume() else { Issue.record("resume while running does nothing"); return }
        #expect(resumed.run == "run")
    }

    @Test func requestsWhilePaused() {
        var resumed = lifecycle(at: "paused")
        guard case .nothing = resumed.pause() else { Issue.record("pausing a paused download does nothing"); return }
        guard case .prepareAgain = resumed.resume() else { Issue.record("resume prepares again"); return }
        #expect(name(resumed.stage) == "preparing")
        guard case .waitForLaunch = resumed.resume() else { Issue.record("a second resume waits for the first"); return }

        var stopped = lifecycle(at: "paused")
        guard case .endNow = stopped.stop() else { Issue.record("a stop ends a paused download at once"); return }

        var cancelled = lifecycle(at: "paused")
        guard case .removeFiles = cancelled.cancel() else { Issue.record("a cancel removes a paused download's files"); return }
        #expect(name(cancelled.stage) == "finishing")
    }

    /// A stop keeps the files (for a resume); a cancel after the end it led to removes them, once. An end
    /// by anything else (a failure, a cancel, a finish) leaves a later cancel nothing to do.
    @Test func aCancelAfterAStopRemovesTheKeptFilesOnce() {
        var whilePreparing = lifecycle(at: "preparing")
        _ = whilePreparing.stop()
        #expect(whilePreparing.prepared(succeeded: true) == .endCancelled)
        var whileRunning = lifecycle(at: "running")
        _ = whileRunning.stop()
        #expect(whileRunning.runPaused() == .endCancelled)
        var whilePaused = lifecycle(at: "paused")
        guard case .endNow = whilePaused.stop() else { Issue.record("stop while paused"); return }
        for var stopped in [whilePreparing, whileRunning, whilePaused] {
            stopped.ended()
            guard case .removeKeptFiles = stopped.cancel() else { Issue.record("the first cancel after a stop"); continue }
            guard case .nothing = stopped.cancel() else { Issue.record("a second cancel after a stop"); continue }
            #expect(name(stopped.stage) == "ended")
        }
        var failed = lifecycle(at: "preparing")
        _ = failed.stop()
        #expect(failed.prepared(succeeded: false) == .fail)
        failed.ended()
        guard case .nothing = failed.cancel() else { Issue.record("a cancel after a failure"); return }
    }

    @Test func finishingAndEndedIgnoreEveryRequest() {
        for stage in ["finishing", "ended"] {
            var lifecycle = lifecycle(at: stage)
            guard case .nothing = lifecycle.pause() else { Issue.record("pause at \(stage)"); continue }
            guard case .nothing = lifecycle.stop() else { Issue.record("stop at \(stage)"); continue }
            guard case .nothing = lifecycle.cancel() else { Issue.record("cancel at \(stage)"); continue }
            switch (stage, lifecycle.resume()) {
            case ("finishing", .alreadyRunning), ("ended", .ended): break
            case (_, let effect): Issue.record("resume at \(stage): \(effect)")
            }
            #expect(name(lifecycle.stage) == stage && lifecycle.pending == .none)
        }
    }
}
