import FuzzDriver
import HaulHTTP

/// URL parsing and relative resolution must never crash, and what they produce must read back as itself:
/// a parsed URL's text parses to the same URL, and so does the result of resolving a reference; the in-place
/// reader of plain URLs agrees with the general parser. The input is "base\nreference".
func fuzzURL(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let parts = text.split(separator: "\n", maxSplits: 1, omittingEmptySubsequences: false)
    let first = String(parts[0])
    let parsed = try? HTTPURL(first)
    // Plain URLs are read in place, but never text with whitespace before it, which the general parser trims:
    // the same text after a space goes through the general parser, and must give the same URL (or none).
    precondition((try? HTTPURL(" " + first)) == parsed, "the in-place reader and the general parser differ on \(first.debugDescription)")
    guard let base = parsed else { return 0 }
    checkRoundTrip(base)
    if parts.count == 2, let resolved = try? base.resolve(String(parts[1])) {
        checkRoundTrip(resolved)
    }
    return 0
}

func checkRoundTrip(_ url: HTTPURL) {
    guard let again = try? HTTPURL(url.description) else {
        preconditionFailure("\(url.description) does not parse again")
    }
    precondition(again.description == url.description, "\(url.description) reads back as \(again.description)")
    precondition(again.origin == url.origin && again.requestTarget == url.requestTarget)
}

@_cdecl("FuzzURL_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzURL($0, $1) }
}
