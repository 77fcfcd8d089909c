/// Which of a client's lanes (``ClientLane``: an event loop with its own pool) a new download runs on, for
/// its whole life: the lane with the fewest downloads running, ties to the lowest index. Pure.
///
/// Ties to the lowest index so that downloads one after another — each started once the previous one ended —
/// all run on lane 0 and reuse the connection it keeps alive (a connection belongs to one loop's pool), as they
/// would with one lane; only downloads that overlap spread, one per lane before any lane gets a second.
package enum LaneChoice {
    /// The index of the lane to start on, given how many downloads run on each lane (at least one lane).
    static func lane(running: some Sequence<Int>) -> Int {
        var best = 0, fewest = Int.max
        for (index, count) in running.enumerated() where count < fewest {
            (best, fewest) = (index, count)
        }
        return best
    }

    /// How many lanes a run of downloads is given when the caller wants as many as help: one per core, at
    /// most `maximum` (past a few loops the server, the disk and the run's own bookkeeping are what limit
    /// it), and one when the run never has two downloads at once (a second loop only costs a thread then).
    /// What the CLI does for `-j N` with a list, and what its API benchmark does to stay comparable.
    package static func laneCount(downloadsMayOverlap: Bool, cores: Int, maximum: Int = 4) -> Int {
        downloadsMayOverlap ? max(1, min(cores, maximum)) : 1
    }
}
