/// How one batch of the ``GroupCommit`` makes its files' data durable: which files share one `syncfs` of
/// their filesystem, which get an `fdatasync` each. Pure: the commit gathers the facts and carries it out.
///
/// What a flush costs is mostly not the data: an `fdatasync` of a 4 KiB file waits for a journal commit and
/// a cache flush of the disk, and ten thousand of them, eight at a time, took 0.52 s where one `syncfs` of
/// the same files took 0.08 s (ext4; docs/benchmarks.md, 2026-11-26; the issue saw 6.6 s against 0.45 s). The
/// price of `syncfs` is that it flushes everything dirty on the filesystem, other programs' writes too, and
/// that its error names no file. So the rule:
///
/// - **one `syncfs` per filesystem** for the files of the batch on it that are at most ``largeFile`` bytes,
///   when there are at least two of them: there the flush per file is the cost, and it is paid once — unless
///   the machine holds more dirty data that is not the batch's than ``dirtyAllowancePerFile`` per such file
///   and more than ``dirtyAllowanceFloor`` (``dirtyAllowance(files:)``): then the `syncfs` would mostly wait
///   for others' data;
/// - **an `fdatasync` each** for a file larger than ``largeFile`` (its own data dominates its flush, and
///   waiting for other writers' data would only add to it), for a file alone on its filesystem in the batch
///   (nothing to share), for a file whose filesystem is unknown (`fstat` failed), for a file whose earlier
///   write-back already failed (its sync reports that), and for every file when the kernel's `syncfs` does
///   not report write-back errors (``syncfsReportsErrors(kernelRelease:)``).
struct FlushPlan: Equatable, Sendable {
    /// What the plan needs to know of one file of the batch.
    struct File: Equatable, Sendable {
        /// The filesystem holding the file (`st_dev`); nil when it could not be found.
        var fileSystem: UInt64?
        /// The file's size.
        var bytes: Int64
        /// ``HaulIO/OutputFile/openOrder``: lower means opened earlier.
        var openOrder: UInt64
        /// Whether a write-back of the file has failed already (its own sync throws that failure).
        var failedBefore = false
    }

    /// The indices of the files synced one by one (`fdatasync`), in batch order.
    var perFile: [Int]
    /// One list per filesystem flushed whole with one `syncfs`: the indices of its files, the first-opened
    /// first. `syncfs` is called on that one's descriptor: it reports the filesystem's write-back errors since
    /// its descriptor was opened, which is before any of the others' data was written.
    var fileSystems: [[Int]]

    /// The largest file that shares a `syncfs` (8 MiB): beyond it the data, not the flush, is most of what a
    /// sync waits for (8 MiB is milliseconds of writing; a flush is one or two).
    static let largeFile: Int64 = 8 << 20

    /// How much of other writers' dirty data one file's `fdatasync` saved is worth waiting for (64 KiB): a
    /// flush of a small file took 0.05–0.1 ms in the measurements of docs/benchmarks.md (10,000 in
    /// 0.5–0.95 s, eight at a time), about what writing 64 KiB takes at 600 MB/s–1.2 GB/s.
    static let dirtyAllowancePerFile: Int64 = 64 << 10

    /// How much of other writers' dirty data any batch may wait for, however few its files (8 MiB). Measured
    /// on this project's ext4 disk (docs/benchmarks.md, "The dirty-data guard, measured"): with up to 8 MiB
    /// dirty elsewhere one `syncfs` of 16 files took about as long as their 16 `fdatasync`s (4 KiB files: 20–25
    /// against 13–28 ms; 256 KiB files: 9–10 against 5–11 ms), since most of either is the disk's cache flush;
    /// from a few tens of MiB on it took 2–20 times as long. Without this floor a batch of three files would give up its
    /// `syncfs` at 192 KiB of dirty data, which a desktop's other programs hold almost always. Over a whole
    /// run the guard was measured again (docs/benchmarks.md, "Durable small files against a durable peer"):
    /// 10,000 × 4 KiB with 40 MB or 2 GiB of others' data dirty at the start (and other programs writing
    /// meanwhile), one `fdatasync` per file ended the run sooner than a `syncfs` per batch (same-round medians
    /// of 5: 1.23× and 1.53×; at 256 MB, 2 rounds, the `syncfs` was the faster, 0.87×), for about 0.3 s more
    /// CPU: a `syncfs` waits for every writer's backlog and for what they write while it runs, the
    /// `fdatasync`s wait for none of it.
    static let dirtyAllowanceFloor: Int64 = 8 << 20

    /// The most of other writers' dirty data a `syncfs` of `files` small files may wait for.
    static func dirtyAllowance(files: Int) -> Int64 {
        max(Int64(files) * dirtyAllowancePerFile, dirtyAllowanceFloor)
    }

    /// The plan for `files` (in batch order). `syncfsReportsErrors` false: every file on its own.
    /// `dirtyElsewhere`: the bytes dirty or under write-back on the machine (`/proc/meminfo`) less the
    /// batch's own; a filesystem's small files share a `syncfs` only while it is at most
    /// ``dirtyAllowance(files:)`` for them (nil: unknown, no limit). It counts every filesystem, so it
    /// errs towards `fdatasync`, never towards waiting for more.
    static func make(_ files: [File], syncfsReportsErrors: Bool, dirtyElsewhere: Int64? = nil) -> FlushPlan {
        guard syncfsReportsErrors else { return FlushPlan(perFile: Array(files.indices), fileSystems: []) }
        var alone: [Int] = []
        var shared: [UInt64: [Int]] = [:]
        var order: [UInt64] = []
        for (index, file) in files.enumerated() {
            guard let fileSystem = file.fileSystem, file.bytes <= largeFile, !file.failedBefore else {
                alone.append(index)
                continue
            }
            if shared[fileSystem] == nil { order.append(fileSystem) }
            shared[fileSystem, default: []].append(index)
        }
        var groups: [[Int]] = []
        for fileSystem in order {
            let indices = shared[fileSystem] ?? []
            if indices.count < 2 || (dirtyElsewhere ?? 0) > dirtyAllowance(files: indices.count) {
                alone += indices
            } else {
                let first = indices.min { files[$0].openOrder < files[$1].openOrder }!
                groups.append([first] + indices.filter { $0 != first })
            }
        }
        return FlushPlan(perFile: alone.sorted(), fileSystems: groups)
    }

    /// The bytes dirty or under write-back on the machine, from the text of `/proc/meminfo` (its `Dirty:`
    /// and `Writeback:` lines, in kB); nil when either is missing.
    static func dirtyBytes(memoryInformation: String?) -> Int64? {
        guard let memoryInformation else { return nil }
        var dirty: Int64?, writeBack: Int64?
        for line in memoryInformation.split(separator: "\n") {
            let fields = line.split(separator: " ", omittingEmptySubsequences: true)
            guard fields.count >= 2, let kilobytes = Int64(fields[1]) else { continue }
            if fields[0] == "Dirty:" { dirty = kilobytes * 1024 }
            if fields[0] == "Writeback:" { writeBack = kilobytes * 1024 }
        }
        guard let dirty, let writeBack else { return nil }
        return dirty + writeBack
    }

    /// Whether `syncfs` on a kernel of this release (`uname -r`) reports write-back errors: Linux 5.8 and
    /// later do (through the superblock's `errseq`); before that `syncfs` returned 0 after a failed
    /// write-back, so a batch flushed with it could claim data that never reached the disk. An unreadable
    /// release counts as old.
    static func syncfsReportsErrors(kernelRelease: String?) -> Bool {
        guard let kernelRelease else { return false }
        let numbers = kernelRelease.split(whereSeparator: { !$0.isNumber }).prefix(2).compactMap { Int($0) }
        guard numbers.count == 2, kernelRelease.first?.isNumber == true else { return false }
        return (numbers[0], numbers[1]) >= (5, 8)
    }
}
