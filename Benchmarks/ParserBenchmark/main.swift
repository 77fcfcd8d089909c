// Parser benchmark: ns per realistic response head, and de-chunking throughput next to a plain memmove of
// the same bytes. Run in release: `swift run -c release haul-parser-benchmark`.
#if canImport(Glibc)
import Glibc
#endif
import HaulHTTP

func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func median(_ values: [Double]) -> Double {
    let sorted = values.sorted()
    return sorted[sorted.count / 2]
}

/// Runs `body` for `rounds` rounds and returns the median seconds per round.
func measure(rounds: Int, _ body: () throws -> Void) rethrows -> Double {
    var times: [Double] = []
    for _ in 0..<rounds {
        let start = now()
        try body()
        times.append(now() - start)
    }
    return median(times)
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

func benchmarkHeads() throws -> Double {
    var parser = ResponseParser()
    let iterations = Int(CommandLine.arguments.dropFirst(2).first ?? "") ?? 200_000
    var statusSum = 0
    let seconds = try nginxHead.withUnsafeBytes { raw in
        try measure(rounds: CommandLine.arguments.count > 2 ? 1 : 15) {
            for _ in 0..<iterations {
                parser.prepareForNextResponse(requestWasHead: true)
                let (event, _) = try parser.parse(raw)
                guard case .head(let head) = event else { fatalError("expected a head") }
                statusSum &+= head.status &+ head.fields.count
            }
        }
    }
    precondition(statusSum > 0)
    return seconds / Double(iterations) * 1e9
}

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

let headNanoseconds = try benchmarkHeads()
let headBytes = nginxHead.count
print("response head (\(headBytes) bytes, 11 fields): \(String(format1(headNanoseconds))) ns/head, "
    + "\(format1(Double(headBytes) / headNanoseconds * 1e3)) MB/s")

// `heads` alone skips the de-chunking part (for profiling the head path).
if CommandLine.arguments.dropFirst().first == "heads" { exit(0) }

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
    func gbps(_ seconds: Double) -> String { format2(Double(total) / seconds / 1e9) }
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
