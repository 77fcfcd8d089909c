// The Swift API at scale (issue 23, item 4): the downloads of a list (one URL per line, as `haul -i` reads
// it), each started through `HaulClient` from a task group that keeps WIDTH of them running, each saved
// into DIRECTORY under its URL's last path segment. Compared in Benchmarks/bench.py with `haul -i LIST -j
// WIDTH` on the same list, under GNU time, with every output's SHA-256 checked.
//
// Usage: haul-api-benchmark LIST DIRECTORY [--width N] [--no-sync] [--executor] [--executor-per-download]
//        [--work-us N] [--event-loops N]
//
// With --executor, the task group runs with the client's event loops as its task executor preference
// (`withTaskExecutorPreference(client.taskExecutor)`): the tasks continue on the loop thread where their
// downloads end instead of on Swift's cooperative pool. --work-us N has each task compute for N µs after its
// download (what an app might do with each result): with --executor, on the loop thread, in the way of its
// connections. --executor-per-download puts the preference around each `client.download` call only (what
// `download` could do by itself): the task hops onto the loop and back to the pool for every download.
//
// Every download is awaited to its end (`client.download(_:)`, what an embedder writes), unlike the CLI,
// which starts the next transfer as soon as the previous one's bytes are in (`transferEnded()`) and leaves
// the durable commit behind.
// Exits 1 (naming the first failure) if any download failed.
#if canImport(Glibc)
import Glibc
#endif
import Haul

func printError(_ text: String) {
    let line = Array("haul-api-benchmark: \(text)\n".utf8)
    _ = line.withUnsafeBytes { write(2, $0.baseAddress, $0.count) }
}

func fail(_ text: String) -> Never {
    printError(text)
    exit(2)
}

var arguments = Array(CommandLine.arguments.dropFirst())
var width = 16
var synchronizes = true
var prefersClientExecutor = false
var workMicroseconds = 0
var prefersExecutorPerDownload = false
var eventLoops: Int?
var positional: [String] = []
while !arguments.isEmpty {
    let argument = arguments.removeFirst()
    switch argument {
    case "--width":
        guard let value = arguments.first.flatMap({ Int($0) }), value > 0 else { fail("--width takes a positive number") }
        width = value
        arguments.removeFirst()
    case "--no-sync":
        synchronizes = false
    case "--executor":
        prefersClientExecutor = true
    case "--event-loops":
        guard let value = arguments.first.flatMap({ Int($0) }), value > 0 else { fail("--event-loops takes a positive number") }
        eventLoops = value
        arguments.removeFirst()
    case "--executor-per-download":
        prefersExecutorPerDownload = true
    case "--work-us":
        guard let value = arguments.first.flatMap({ Int($0) }), value >= 0 else { fail("--work-us takes a number") }
        workMicroseconds = value
        arguments.removeFirst()
    default:
        positional.append(argument)
    }
}
guard positional.count == 2 else { fail("usage: haul-api-benchmark LIST DIRECTORY [--width N] [--no-sync] [--executor] [--executor-per-download] [--work-us N] [--event-loops N]") }
let (listPath, directory) = (positional[0], positional[1])

func readList(_ path: String) -> [String] {
    guard let file = fopen(path, "r") else { fail("cannot open \(path)") }
    defer { fclose(file) }
    var urls: [String] = []
    var line: UnsafeMutablePointer<CChar>?
    var capacity = 0
    while getline(&line, &capacity, file) > 0 {
        let text = String(cString: line!).split(whereSeparator: { $0 == "\n" || $0 == "\r" }).first.map(String.init) ?? ""
        if !text.isEmpty, !text.hasPrefix("#") { urls.append(text) }
    }
    free(line)
    return urls
}

let requests = readList(listPath).map { url in
    let name = url.split(separator: "/").last.map(String.init) ?? "index"
    return DownloadRequest(url: url, destination: .file(directory + "/" + name))
}

var options = DownloadOptions()
options.synchronizesToDisk = synchronizes
// As many event loops as `haul -i LIST -j WIDTH` runs on, so that the two rows stay comparable (unless
// --event-loops says otherwise).
options.eventLoops = eventLoops ?? LaneChoice.laneCount(downloadsMayOverlap: width > 1 && requests.count > 1, cores: max(1, sysconf(Int32(_SC_NPROCESSORS_ONLN))))
let client: HaulClient
do { client = try HaulClient(options: options) } catch { fail("\(error)") }

/// The task group, off the main actor: top-level code runs on it, and a group awaited there hops to the
/// main thread for every download that ends (measured on 1,000 downloads: 7.7 futex calls per download there,
/// 4.0 here).
enum Downloads {
    static func run(_ requests: [DownloadRequest], client: HaulClient, width: Int, work: Int, perDownload: Bool) async -> [String] {
        await withTaskGroup(of: String?.self) { group in
            var pending = requests[...]
            var failures: [String] = []
            // `width` downloads running: one starts as soon as one ends.
            for _ in 0..<min(width, pending.count) {
                let request = pending.removeFirst()
                group.addTask { await download(request, client: client, work: work, perDownload: perDownload) }
            }
            for await failure in group {
                if let failure { failures.append(failure) }
                if let request = pending.popFirst() { group.addTask { await download(request, client: client, work: work, perDownload: perDownload) } }
            }
            return failures
        }
    }

    static func download(_ request: DownloadRequest, client: HaulClient, work: Int, perDownload: Bool) async -> String? {
        do {
            if perDownload {
                _ = try await withTaskExecutorPreference(client.taskExecutor) { () async throws(HaulError) -> DownloadResult in
                    try await client.download(request)
                }
            } else {
                _ = try await client.download(request)
            }
            if work > 0 { spin(microseconds: work) }
            return nil
        } catch {
            return "\(request.url): \(error)"
        }
    }

    /// Keeps the thread busy for `microseconds` (the app's own work on each result).
    static func spin(microseconds: Int) {
        var start = timespec(), now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &start)
        repeat {
            clock_gettime(CLOCK_MONOTONIC, &now)
        } while (now.tv_sec - start.tv_sec) * 1_000_000 + (now.tv_nsec - start.tv_nsec) / 1_000 < microseconds
    }
}

let failures = prefersClientExecutor
    ? await withTaskExecutorPreference(client.taskExecutor) { await Downloads.run(requests, client: client, width: width, work: workMicroseconds, perDownload: prefersExecutorPerDownload) }
    : await Downloads.run(requests, client: client, width: width, work: workMicroseconds, perDownload: prefersExecutorPerDownload)
await client.shutdown()
if let first = failures.first {
    printError("\(failures.count) of \(requests.count) downloads failed; first: \(first)")
    exit(1)
}
