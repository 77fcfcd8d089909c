import FuzzDriver
import HaulHTTP

/// The header values the engine reads from servers: Content-Range, ETag, HTTP-date, Retry-After,
/// Accept-Ranges, Content-Type, Content-Encoding and Repr-Digest. None may crash or trap on any bytes, and what parses
/// must read back as itself.
func fuzzFieldValues(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let value = Array(UnsafeBufferPointer(start: data, count: size))[...]

    if let range = ContentRange(value) {
        precondition(ContentRange(range.description) == range, "Content-Range \(range) does not read back")
        _ = range.count
    }
    if let tag = EntityTag(value) {
        precondition(EntityTag(tag.fieldValue[...]) == tag, "ETag does not read back")
        precondition(tag.isWeak == (tag.ifRangeValue == nil))
    }
    if let date = HTTPDate(value) {
        precondition(HTTPDate(date.imfFixdate) == date, "\(date.imfFixdate) does not read back")
    }
    if let retry = RetryAfter(value) {
        precondition(retry.delay(now: 0) >= 0 && retry.delay(now: Int64.max) >= 0, "negative Retry-After delay")
    }
    if let ranges = AcceptRanges(value) {
        precondition(ranges.units.allSatisfy { $0 == $0.lowercased() }, "units are reported lowercased")
    }
    if let type = MediaType(value) {
        // What was read, of a malformed value too, reads back as itself and well formed.
        let again = MediaType(type.fieldValue[...])
        precondition(again?.essence == type.essence && again?.parameters == type.parameters && again?.parametersAreWellFormed == true,
                     "Content-Type \(type) does not read back")
        _ = type.boundary
    }
    if let encoding = ContentEncoding(value) {
        precondition(encoding.codings.allSatisfy { !$0.isEmpty && $0 == $0.lowercased() }, "codings are reported lowercased")
    }
    // What parses has RFC 8941 keys: never empty, no uppercase, space or control byte.
    for (algorithm, _) in RepresentationDigest.members(of: [value]) {
        precondition(!algorithm.isEmpty && algorithm.utf8.allSatisfy { !(65...90).contains($0) && $0 > 32 && $0 < 127 },
                     "Repr-Digest key \(algorithm) is not an RFC 8941 key")
    }
    return 0
}

@_cdecl("FuzzFieldValues_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzFieldValues($0, $1) }
}
