import HaulIO
import Synchronization

/// Hashes the pieces of a download with piece hashes, read back from its file (`pread`, from the page cache
/// right after the bytes were written), on a blocking-work thread (``BlockingWork``): never on the event
/// loop, never on Swift's cooperative pool.
///
/// One job at a time per download takes every piece queued so far, so that many small pieces cost one thread
/// hop, not one each; each result comes back through `loop.execute` as soon as its piece is hashed.
/// Loop-confined apart from that thread.
final class PieceHasher: @unchecked Sendable {
    // @unchecked Sendable: `queued` and `running` are touched on the loop only; the job gets value copies
    // and `generation`, which is atomic.

    let loop: EventLoop
    private var queued: [(file: OutputFile, check: PieceCheck)] = []
    private var running = false
    /// Bumped by ``stop()``: a job of an earlier generation hashes nothing more.
    private let generation = Atomic<Int>(0)

    /// Called on the loop with each piece's result.
    private let report: (PieceHashResult) -> Void

    init(loop: EventLoop, report: @escaping (PieceHashResult) -> Void) {
        self.loop = loop
        self.report = report
    }

    /// Hashes each of `checks` from `file`; each result goes to `report`, on the loop.
    func hash(_ checks: [PieceCheck], in file: OutputFile) {
        precondition(loop.inEventLoop)
        queued += checks.map { (file, $0) }
        startIfIdle()
    }

    /// Drops what is queued; a job under way stops before its next piece (the download stopped or starts over).
    func stop() {
        precondition(loop.inEventLoop)
        queued = []
        generation.add(1, ordering: .relaxed)
    }

    private func startIfIdle() {
        guard !running, !queued.isEmpty else { return }
        running = true
        let batch = Batch(pieces: queued)
        queued = []
        let started = generation.load(ordering: .relaxed)
        BlockingWork.start { [self] in
            for (file, check) in batch.pieces {
                guard generation.load(ordering: .relaxed) == started else { break }
                let outcome = Result { () throws(SystemError) -> String in
                    try FileDigest.hex(of: file.fileDescriptor, range: check.range, algorithm: check.algorithm)
                }
                loop.execute { [self] in report(PieceHashResult(check: check, outcome: outcome)) }
            }
            loop.execute { [self] in
                running = false
                startIfIdle()
            }
        }
    }

    /// The pieces one job hashes, handed to its thread by value.
    private struct Batch: @unchecked Sendable {
        // @unchecked Sendable: `OutputFile` is Sendable; `PieceCheck` is a value.
        let pieces: [(file: OutputFile, check: PieceCheck)]
    }
}
