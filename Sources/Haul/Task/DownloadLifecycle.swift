import HaulIO

/// Where a download is in its life, and what a pause, resume, stop or cancel does at each stage: the
/// decisions of ``DownloadTask``, as a value with no I/O so that every pair of (stage, request) is tested.
///
/// ```
/// preparing ──prepared──▶ running ──finished──▶ finishing ──▶ ended
///     │  ▲                   │
///     │  └────resume──── paused ◀──paused──┘
///     └──failed / stopped / cancelled──────────────────────────▶ ended
/// ```
///
/// Preparing (checking the destination, reading a journal) cannot be interrupted, nor can a run stop at
/// once (its last checkpoint must land first): a pause, stop or cancel asked for meanwhile is remembered as
/// `pending` and applied when the stage ends. `Run` is the running download (``SegmentedDownload`` in the
/// engine, anything in tests).
struct DownloadLifecycle<Run> {
    enum Stage {
        /// Checking the destination and any journal.
        case preparing
        case running(Run)
        /// Checksum, sync and rename; or removing the files of a cancelled download.
        case finishing
        case paused
        case ended
    }

    /// What a pause, stop or cancel asked for while the stage could not act on it yet. A cancel is never
    /// weakened into a stop or a pause: its files must go.
    enum Pending: Equatable {
        case none
        case pause
        /// A stop: like a pause (files kept for a later resume), then the end, as cancelled.
        case stop
        case cancel
    }

    private(set) var stage: Stage = .preparing
    private(set) var pending: Pending = .none
    /// Ended by a stop, whose partial file and journal stay for a later resume: a ``cancel()`` after the end
    /// still removes them, as a cancel of the paused download would have.
    private(set) var endedKeepingFiles = false

    /// The running download, if any.
    var run: Run? {
        if case .running(let run) = stage { return run }
        return nil
    }

    var isPaused: Bool {
        if case .paused = stage { return true }
        return false
    }

    // MARK: Requests

    enum PauseEffect {
        /// Wait for the pause to take effect (when preparing ends, or when `run`, told to pause, stops).
        case wait(pausing: Run?)
        /// Nothing to pause: paused already, finishing or ended.
        case nothing
    }

    mutating func pause() -> PauseEffect {
        switch stage {
        case .preparing:
            if pending == .none { pending = .pause }
            return .wait(pausing: nil)
        case .running(let run):
            if pending == .none { pending = .pause }
            return .wait(pausing: run)
        case .paused, .finishing, .ended:
            return .nothing
        }
    }

    enum ResumeEffect {
        /// Paused: prepare the download again (the stage is `preparing` now).
        case prepareAgain
        /// Preparing: wait for it to end (a pending pause is withdrawn; a pending stop or cancel stays).
        case waitForLaunch
        /// Running or finishing: nothing to do.
        case alreadyRunning
        /// Ended: nothing can continue.
        case ended
    }

    mutating func resume() -> ResumeEffect {
        switch stage {
        case .paused:
            stage = .preparing
            return .prepareAgain
        case .preparing:
            if pending == .pause { pending = .none }
            return .waitForLaunch
        case .running, .finishing:
            return .alreadyRunning
        case .ended:
            return .ended
        }
    }

    enum StopEffect {
        case nothing
        /// Tell `run` to pause; its end then ends the download.
        case pauseRun(Run)
        /// Paused: end now, as cancelled, keeping the files.
        case endNow
    }

    mutating func stop() -> StopEffect {
        switch stage {
        case .preparing:
            if pending != .cancel { pending = .stop }
            return .nothing
        case .running(let run):
            if pending != .cancel { pending = .stop }
            return .pauseRun(run)
        case .paused:
            endedKeepingFiles = true
            return .endNow
        case .finishing, .ended:
            return .nothing
        }
    }

    enum CancelEffect {
        /// Wait for the cancel to take effect (when preparing ends, or when `run`, told to cancel, stops).
        case wait(cancelling: Run?)
        /// Paused: remove the files now (the stage is `finishing` now).
        case removeFiles
        /// Ended by a stop that kept the files: remove them (once; the stage stays `ended`).
        case removeKeptFiles
        /// Finishing, or ended otherwise: too late to cancel.
        case nothing
    }

    mutating func cancel() -> CancelEffect {
        switch stage {
        case .preparing:
            pending = .cancel
            return .wait(cancelling: nil)
        case .running(let run):
            pending = .cancel
            return .wait(cancelling: run)
        case .paused:
            stage = .finishing
            return .removeFiles
        case .ended where endedKeepingFiles:
            endedKeepingFiles = false
            return .removeKeptFiles
        case .finishing, .ended:
            return .nothing
        }
    }

    // MARK: Stage ends

    enum Launch: Equatable {
        /// Preparing failed: end with its error.
        case fail
        /// A cancel came while preparing: remove the files (the stage is `finishing` now).
        case removeFiles
        /// A stop came while preparing: end as cancelled.
        case endCancelled
        /// A pause came while preparing: the stage is `paused` now.
        case paused
        /// Start the run, then report it with ``started(_:)``.
        case run
    }

    /// Preparing ended, successfully or not.
    mutating func prepared(succeeded: Bool) -> Launch {
        guard succeeded else { return .fail }
        switch pending {
        case .cancel:
            stage = .finishing
            return .removeFiles
        case .stop:
            endedKeepingFiles = true
            return .endCancelled
        case .pause:
            pending = .none
            stage = .paused
            return .paused
        case .none:
            return .run
        }
    }

    mutating func started(_ run: Run) {
        stage = .running(run)
    }

    enum RunStop: Equatable {
        case endCancelled
        /// The stage is `finishing` now.
        case removeFiles
        /// The stage is `paused` now.
        case paused
    }

    /// The run stopped after being told to pause (by a pause or a stop).
    mutating func runPaused() -> RunStop {
        switch pending {
        case .stop:
            endedKeepingFiles = true
            return .endCancelled
        case .cancel:
            stage = .finishing
            return .removeFiles
        case .pause, .none:
            pending = .none
            stage = .paused
            return .paused
        }
    }

    /// Every byte is in (or the files of a cancelled run are to be removed): only the finish remains.
    mutating func finishing() {
        stage = .finishing
    }

    mutating func ended() {
        stage = .ended
        pending = .none
    }
}
