// Parser benchmark: ns per realistic response head, with picohttpparser parsing the same head in the same
// run as the reference, and de-chunking throughput next to a plain memmove of the same bytes.
// Run in release: `swift run -c release haul-parser-benchmark [heads|pico [ITERATIONS]]`.
//   heads: Haul's head parser only (for profiling: with ITERATIONS, one round of that many heads, so
//          `valgrind --tool=callgrind` at two counts gives instructions per head by difference);
//   pico:  picohttpparser only.
//
// Every figure is the median over rounds of two clocks: wall time, and the thread's CPU time. On a quiet
// machine they agree; while other work shares the cores, wall time includes time spent descheduled and
// the CPU-time column is the one to compare.
#if canImport(Glibc)
import Glibc
#endif
import CPicoHTTPParser
import HaulHTTP

func clock(_ id: clockid_t) -> Double {
    var ts = timespec()
    clock_gettime(id, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

/// Runs `body` for `rounds` rounds; returns the median wall and thread-CPU seconds per round.
func measure(rounds: Int, _ body: () throws -> Void) rethrows -> (wall: Double, cpu: Double) {
    var wall: [Double] = [], cpu: [Double] = []
    for _ in 0..<rounds {
        let (start, startCPU) = (clock(CLOCK_MONOTONIC), clock(CLOCK_THREAD_CPUTIME_ID))
        try body()
        cpu.append(clock(CLOCK_THREAD_CPUTIME_ID) - startCPU)
        wall.append(clock(CLOCK_MONOTONIC) - start)
    }
    return (median(wall), median(cpu))
}

/// The head nginx sends for a static file, padded to the 333 bytes and 11 fields the target names.
let nginxHead = Array(("HTTP/1.1 200 OK\r\n"
    + "Server: nginx/1.22.1\r\n"
    + "Date: Sun, 22 Nov 2026 04:30:00 GMT\r\n"
    + "Content-Type: application/octet-stream\r\n"
    + "Content-Length: 1073741824\r\n"
    + "Last-Modified: Sat, 21 Nov 2026 10:00:00 GMT\r\n"
    + "Connection: keep-alive\r\n"
    + "ETag: \"6921f2a0-40000000\"\r\n"
    + "Accept-Ranges: bytes\r\n"
    + "Cache-Control: max-age=3600\r\n"
    + "X-Trace: 7f3a9\r\n"
    + "Vary: Accept-Encoding\r\n"
    + "\r\n").utf8)

let mode = CommandLine.arguments.dropFirst().first ?? "all"
let givenIterations = Int(CommandLine.arguments.dropFirst(2).first ?? "")
let headIterations = givenIterations ?? 200_000
let headRounds = givenIterations == nil ? 15 : 1

/// Nanoseconds per head (wall, CPU) for Haul's parser: a keep-alive connection's parser reused per response.
func benchmarkHeads() throws -> (wall: Double, cpu: Double) {
    var parser = ResponseParser()
    var statusSum = 0
    let seconds = try nginxHead.withUnsafeBytes { raw in
        try measure(rounds: headRounds) {
            for _ in 0..<headIterations {
                parser.prepareForNextResponse(requestWasHead: true)
                let (event, _) = try parser.parse(raw)
                guard case .head(let head) = event else { fatalError("expected a head") }
                statusSum &+= head.status &+ head.fields.count
            }
        }
    }
    precondition(statusSum == (200 + 11) &* headIterations &* headRounds)
    return (seconds.wall / Double(headIterations) * 1e9, seconds.cpu / Double(headIterations) * 1e9)
}

/// The same for picohttpparser's `phr_parse_response` on the same bytes.
func benchmarkPico(sse42: Bool) -> (wall: Double, cpu: Double) {
    var statusSum = 0
    let seconds = nginxHead.withUnsafeBytes { raw in
        let base = raw.baseAddress!.assumingMemoryBound(to: CChar.self)
        return measure(rounds: headRounds) {
            for _ in 0..<headIterations {
                var status: Int32 = 0
                var count = 0
                let used = sse42 ? haul_bench_pico_parse_response_sse42(base, raw.count, &status, &count)
                                 : haul_bench_pico_parse_response(base, raw.count, &status, &count)
                statusSum &+= Int(used) &+ Int(status) &+ count
            }
        }
    }
    precondition(statusSum == (nginxHead.count + 200 + 11) &* headIterations &* headRounds)
    return (seconds.wall / Double(headIterations) * 1e9, seconds.cpu / Double(headIterations) * 1e9)
}

func report(_ what: String, _ ns: (wall: Double, cpu: Double)) {
    print("\(what): \(format1(ns.wall)) ns/head wall, \(format1(ns.cpu)) ns/head CPU, "
        + "\(format1(Double(nginxHead.count) / ns.cpu * 1e3)) MB/s")
}

if mode == "all" || mode == "heads" {
    report("response head (\(nginxHead.count) bytes, 11 fields), Haul", try benchmarkHeads())
}
if mode == "all" || mode == "pico" {
    report("same head, picohttpparser (baseline x86-64 build)", benchmarkPico(sse42: false))
    if haul_bench_pico_has_sse42() != 0 {
        report("same head, picohttpparser (SSE4.2 build)       ", benchmarkPico(sse42: true))
    }
}
// The head modes skip the de-chunking part.
if mode != "all" { exit(0) }

func chunkedBody(total: Int, chunk: Int) -> [UInt8] {
    var body: [UInt8] = Array("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".utf8)
    body.reserveCapacity(total + total / chunk * 10 + 64)
    let payload = (0..<chunk).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }
    let sizeLine = Array((String(chunk, radix: 16) + "\r\n").utf8)
    for _ in 0..<(total / chunk) {
        body += sizeLine
        body += payload
        body += [0x0D, 0x0A]
    }
    body += Array("0\r\n\r\n".utf8)
    return body
}

/// De-chunks `input` as the network would deliver it (`readSize` bytes per read); when `output` is given,
/// also copies each body slice there (what a consumer needing contiguous bytes pays).
func dechunk(_ input: UnsafeRawBufferPointer, readSize: Int, output: UnsafeMutableRawPointer?) throws -> Int {
    var parser = ResponseParser()
    var delivered = 0
    var start = 0
    while start < input.count {
        let read = UnsafeRawBufferPointer(rebasing: input[start..<min(input.count, start + readSize)])
        var offset = 0
        loop: while true {
            let (event, consumed) = try parser.parse(UnsafeRawBufferPointer(rebasing: read[offset...]))
            offset += consumed
            switch event {
            case .body(let bytes):
                if let output { memcpy(output + delivered, bytes.baseAddress!, bytes.count) }
                delivered += bytes.count
            case .needMoreInput, .end: break loop
            case .head, .interim: continue
            }
        }
        start += readSize
    }
    return delivered
}

let total = 64 << 20
let input = chunkedBody(total: total, chunk: 16 << 10)
let output = UnsafeMutableRawPointer.allocate(byteCount: total, alignment: 64)
let source = UnsafeMutableRawPointer.allocate(byteCount: total, alignment: 64)
memset(output, 1, total)
memset(source, 2, total)
defer { output.deallocate(); source.deallocate() }

try input.withUnsafeBytes { raw in
    var delivered = 0
    let parseOnly = try measure(rounds: 9) { delivered = try dechunk(raw, readSize: 256 << 10, output: nil) }
    precondition(delivered == total)
    let parseAndCopy = try measure(rounds: 9) { delivered = try dechunk(raw, readSize: 256 << 10, output: output) }
    precondition(delivered == total)
    let memmoveOnly = measure(rounds: 9) { memmove(output, source, total) }
    // Wall time: memmove's speed is memory bandwidth, which CPU time does not capture.
    func gbps(_ seconds: (wall: Double, cpu: Double)) -> String { format2(Double(total) / seconds.wall / 1e9) }
    print("de-chunk 64 MiB in 16 KiB chunks, zero copy (body slices): \(gbps(parseOnly)) GB/s")
    print("de-chunk 64 MiB, copying each slice out:                  \(gbps(parseAndCopy)) GB/s")
    print("memmove of the same 64 MiB (reference):                   \(gbps(memmoveOnly)) GB/s")
}

func format1(_ x: Double) -> String { formatFixed(x, digits: 1) }
func format2(_ x: Double) -> String { formatFixed(x, digits: 2) }
func formatFixed(_ x: Double, digits: Int) -> String {
    var scale = 1.0
    for _ in 0..<digits { scale *= 10 }
    let rounded = (x * scale).rounded() / scale
    var text = String(rounded)
    if let dot = text.firstIndex(of: ".") {
        let decimals = text.distance(from: dot, to: text.endIndex) - 1
        if decimals < digits { text += String(repeating: "0", count: digits - decimals) }
    }
    return text
}
