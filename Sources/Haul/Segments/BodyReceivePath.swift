/// How the next bytes of a response body reach the file: read into the receive buffer and written with
/// `pwrite` (two copies), or spliced socket → pipe → file (one copy, none through user space). Pure.
///
/// Splicing is for the bulk of a big file: a body whose `Content-Length` promised its length, whose window
/// takes every byte from here to the range's end into a file on disk. Everything else is received: the
/// output stream and memory (which keep `recv` + `pwrite`, as the issue asks), a rate-limited download
/// (paced in receive-buffer steps; it is not CPU-bound, and a pipe's worth per step would only make its pauses coarser), a
/// provisional window (chunked or close-delimited: its bytes are not proven), bytes a whole-file body drops
/// before its range, a response being drained. Two more conditions are enforced below this decision, where
/// the facts live: `HTTPConnection` splices only a body framed by `Content-Length` and never past its
/// declared end, and `Connection` only on plain TCP (a TLS body must be decrypted in user space).
enum BodyReceivePath: Equatable {
    /// Read the bytes and write them from the receive buffer.
    case receive
    /// Splice at most this many bytes (the room left in the window and the segment; always positive).
    case splice(upTo: Int64)

    /// Where the download's bytes go.
    enum Sink: Equatable {
        case file
        case stream
        case memory
    }

    /// - Parameters:
    ///   - enabled: ``DownloadOptions/splicesBodies``.
    ///   - sink: where the bytes go.
    ///   - rateLimited: whether a rate limit paces the download.
    ///   - window: the response's body window; nil while the body is not file content (only drained).
    ///   - draining: whether the worker is draining what remains of a response after its segment was done.
    ///   - segmentEnd: where the worker's segment ends now (it shrinks when another connection takes its
    ///     tail); nil without a segment.
    static func decide(enabled: Bool, sink: Sink, rateLimited: Bool, window: BodyWindow?, draining: Bool,
                       segmentEnd: Int64?) -> BodyReceivePath {
        guard enabled, sink == .file, !rateLimited, !draining, let window, window.bounded,
              window.received >= window.skipped else { return .receive }
        let end: Int64
        switch (window.end, segmentEnd) {
        case (let a?, let b?): end = min(a, b)
        case (let a?, nil): end = a
        case (nil, let b?): end = b
        case (nil, nil): return .receive
        }
        let room = end - window.position
        return room > 0 ? .splice(upTo: room) : .receive
    }

    /// The bytes that may be spliced: 0 for ``receive``.
    var spliceBytes: Int64 {
        if case .splice(let count) = self { return count }
        return 0
    }
}

/// Where the pipe → file move of spliced bytes runs (``DownloadOptions/handsOffSplicedWrites``). Pure.
///
/// A writer thread takes the page-cache copy of a big body's bulk off the loop, but each hand-off costs a
/// thread's wake-up, a completion back on the loop and the reader's restart. A few kilobytes — a small file's
/// body that missed its head's read (1–20% of 10,000 × 4 KiB files), a segment's last bytes — cost less to
/// copy on the loop than to hand off.
enum SplicedWritePlace: Equatable {
    /// On the loop thread, now (``BodySink/write(piped:count:at:)``).
    case loop
    /// On a writer thread, counted when its completion runs on the loop.
    case writerThread

    /// The fewest piped bytes worth a writer thread: a quarter of the default pipe
    /// (`ConnectionOptions.splicePipeSize`), so the bulk of a big body, read a pipe's worth at a time,
    /// still goes to the writer.
    static let handOffMinimum = 64 << 10

    /// - Parameters:
    ///   - handsOff: whether the download hands spliced writes to a writer thread at all.
    ///   - count: the bytes in the pipe.
    static func decide(handsOff: Bool, count: Int) -> SplicedWritePlace {
        handsOff && count >= handOffMinimum ? .writerThread : .loop
    }
}

/// What spliced bytes handed to a writer thread do once their write returns (``SegmentWorker``). Pure.
///
/// They count — the window, ``SegmentWorkerHost/bodyWritten(_:at:proven:on:)``, the segment's end — only
/// now, and only for the exchange that read them while it still runs: a write that returns after its
/// exchange was stopped or replaced, or its download stopped, counts for nothing (the bytes are in the file,
/// where any later write of the same range puts the same bytes; the journal never records them).
enum HandedOffWriteReturn: Equatable {
    /// Count nothing; the exchange stops (a closed connection reports its own end).
    case countsForNothing
    /// The exchange fails with the write's error.
    case fails
    /// The bytes count.
    case counts

    /// - Parameters:
    ///   - exchangeCurrent: the worker's exchange that handed the bytes off still runs.
    ///   - downloadStopped: the download has stopped (paused, cancelled, failed).
    ///   - failed: the write failed.
    static func decide(exchangeCurrent: Bool, downloadStopped: Bool, failed: Bool) -> HandedOffWriteReturn {
        guard exchangeCurrent, !downloadStopped else { return .countsForNothing }
        return failed ? .fails : .counts
    }
}

/// What a step of a download does about spliced bytes handed to a writer thread and not yet written
/// (``BodySink/handOff(piped:count:at:completion:)``). The loop thread never waits for such a write: a step
/// that must come after them is put off and runs on the loop once they have returned
/// (``BodySink/afterHandedOffWrites(on:_:)``), while every other connection and timer of the loop goes on.
///
/// Every write under way was handed off after the file was last emptied (emptying it refuses to overlap
/// one, and the probe whose head empties it waits for them), and of the same bytes: the resource as its
/// validators say. So only emptying the file, sizing it, and giving it up must come after them; a write of
/// the same offsets puts the same bytes there, in whichever order the two land.
enum HandedOffWriteOrder: Equatable {
    /// The step goes ahead now.
    case now
    /// The step waits for every write handed off before it, then runs on the loop.
    case afterWrites
    /// The step must not happen while a write is under way, and cannot wait (it answers a response head
    /// on the spot): it fails the download instead. Never the case: the probe whose head it answers waited.
    case refuse

    enum Step: CaseIterable {
        /// Sending a probe: its head empties the file (or says how long it is, before mirror checks that
        /// end in emptying it).
        case sendProbe
        /// Sending a request for a segment, or a mirror's check: their heads change nothing in the file.
        case sendOther
        /// Emptying the file and reserving its length (a probe's head, the end of the mirror checks).
        case prepareFile
        /// Opening a resumed download's `.part` as it is: nothing in it changes.
        case openPartialFile
        /// Writing body bytes from the loop (read, not spliced): the same bytes as any write of those
        /// offsets under way.
        case writeFromLoop
        /// Sizing the output, every byte written, before the download is done: the size must be the one
        /// the writes leave.
        case checkOutput
        /// Pausing: the bytes of the writes under way count first, so the pause keeps them (and a pause
        /// right after the first bytes is not taken for one before any, which keeps nothing).
        case pause
        /// Cancelling: stops the download at once; its end waits.
        case cancel
        /// The end: none lands after it (the rename, the removal, another run's writes of the `.part`).
        case end
    }

    static func decide(_ step: Step, writesUnderway: Bool) -> HandedOffWriteOrder {
        guard writesUnderway else { return .now }
        switch step {
        case .sendOther, .openPartialFile, .writeFromLoop, .cancel: return .now
        case .sendProbe, .checkOutput, .pause, .end: return .afterWrites
        case .prepareFile: return .refuse
        }
    }
}
