import FuzzDriver
import HaulHTTP

/// Feeds arbitrary bytes to the chunked decoder in two ways (whole, and split by the first input byte as
/// a seed); both must agree on the data and on the error, and data ranges must stay inside the input.
func fuzzChunkedDecoder(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    let whole = decodeChunks(input, pieces: [0..<input.count])
    var splitter = InputSplitter(seed: UInt64(input.first ?? 0))
    let split = decodeChunks(input, pieces: splitter.pieces(count: input.count))
    precondition(whole.data == split.data && whole.error == split.error && whole.ended == split.ended,
                 "chunked decoding depends on how the input was split")
    return 0
}

func decodeChunks(_ input: [UInt8], pieces: [Range<Int>]) -> (data: [UInt8], error: HTTPParseError?, ended: Bool) {
    var decoder = ChunkedDecoder(maxLineBytes: 64)
    var out: [UInt8] = []
    do throws(HTTPParseError) {
        for piece in pieces {
            var offset = piece.lowerBound
            while true {
                let chunk = input[offset..<piece.upperBound]
                let (step, consumed) = try chunk.withUnsafeBytes { raw in
                    Result { () throws(HTTPParseError) in try decoder.decode(raw, baseOffset: offset) }
                }.get()
                precondition(consumed <= chunk.count, "consumed more than given")
                switch step {
                case .needMoreInput:
                    precondition(consumed == chunk.count)
                    offset += consumed
                case .data(let range):
                    precondition(range.upperBound <= chunk.count && !range.isEmpty, "data range outside input")
                    out += chunk[(offset + range.lowerBound)..<(offset + range.upperBound)]
                    offset += consumed
                    continue
                case .lastChunk:
                    return (out, nil, true)
                }
                break
            }
        }
    } catch {
        return (out, error, false)
    }
    return (out, nil, false)
}

@_cdecl("FuzzChunkedDecoder_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzChunkedDecoder($0, $1) }
}
