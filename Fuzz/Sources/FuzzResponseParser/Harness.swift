import FuzzDriver
import HaulHTTP

/// Differential check: the same bytes fed in one piece and in seeded random pieces must give the same
/// response or the same error. The first byte picks the seed, HEAD-ness and tight limits, so the fuzzer
/// explores the limit paths too.
func fuzzResponseParser(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard size > 0, let data else { return 0 }
    let control = data[0]
    let input = Array(UnsafeBufferPointer(start: data + 1, count: size - 1))
    let requestWasHead = control & 1 != 0
    let limits = control & 2 != 0
        ? ParserLimits(maxHeadBytes: 128, maxFields: 4, maxChunkLineBytes: 16, maxTrailerBytes: 32, maxInterimResponses: 1)
        : ParserLimits()

    let whole = CollectedResponse.parse(pieces: [input[...]], requestWasHead: requestWasHead, limits: limits)
    var splitter = InputSplitter(seed: UInt64(control >> 2))
    let pieces = splitter.pieces(count: input.count).map { input[$0] }
    let split = CollectedResponse.parse(pieces: pieces, requestWasHead: requestWasHead, limits: limits)
    let bytewise = CollectedResponse.parse(pieces: input.indices.map { input[$0...$0] },
                                           requestWasHead: requestWasHead, limits: limits)
    precondition(whole == split, "random split changed the result")
    precondition(whole == bytewise, "byte-at-a-time feeding changed the result")

    precondition(whole.consumed <= input.count, "consumed more than the input")
    precondition(whole.isComplete != (whole.error != nil), "a response must end or fail, not both or neither")
    precondition(whole.interim.count <= limits.maxInterimResponses, "more interim responses than the limit")
    for head in whole.interim { precondition(head.isInterim && head.status != 101) }
    // A value never keeps any of an obs-fold's line break (the fold as a whole becomes spaces), nor starts or
    // ends with whitespace.
    for fields in whole.interim.map(\.fields) + [whole.head?.fields ?? HTTPFields(), whole.trailers] {
        for index in 0..<fields.count {
            let value = fields.value(at: index)
            precondition(!value.contains(0x0D) && !value.contains(0x0A), "CR or LF left in a field value")
            for edge in [value.first, value.last].compactMap({ $0 }) {
                precondition(edge != 0x20 && edge != 0x09, "whitespace at the edge of a field value")
            }
        }
    }
    // The one-pass lookup by a set of names (what ResponseFacts reads) reports exactly the fields a lookup
    // per name finds, in order, each with the index of its name in the set.
    for fields in whole.interim.map(\.fields) + [whole.head?.fields ?? HTTPFields(), whole.trailers] {
        var reported: [(index: Int, name: Int)] = []
        fields.forEachField(named: fuzzedFieldNames) { reported.append(($0, $1)) }
        var expected: [(index: Int, name: Int)] = []
        for index in 0..<fields.count {
            if let name = fuzzedFieldNameTexts.firstIndex(where: { asciiCaseInsensitiveEquals(fields.name(at: index), $0) }) {
                expected.append((index, name))
            }
        }
        precondition(reported.map(\.index) == expected.map(\.index) && reported.map(\.name) == expected.map(\.name),
                     "forEachField(named:) disagrees with a lookup per name")
    }
    if let head = whole.head, whole.isComplete {
        switch head.framing {
        case .none: precondition(whole.body.isEmpty)
        case .contentLength(let length): precondition(Int64(whole.body.count) == length)
        case .chunked, .untilClose: break
        }
        precondition(head.status >= 200 && head.status <= 999)
    }
    return 0
}

/// The names `ResponseFacts` reads in one pass, plus look-alikes of the same lengths, as the fuzz target asks for them.
let fuzzedFieldNames = FieldNameSet(["content-range", "etag", "last-modified", "location", "content-type",
                                     "content-encoding", "content-length", "x"])
let fuzzedFieldNameTexts = ["content-range", "etag", "last-modified", "location", "content-type",
                            "content-encoding", "content-length", "x"]

@_cdecl("FuzzResponseParser_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzResponseParser($0, $1) }
}
