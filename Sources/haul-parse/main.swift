// haul-parse: reads one raw HTTP/1.1 response from stdin and prints what Haul's parser makes of it as one
// JSON object. It is how the parser's conformance is checked from outside.
#if canImport(Glibc)
import Glibc
#endif
import HaulHTTP

func usage() -> Never {
    let text = "usage: haul-parse [--head] [--split-seed N] < response-bytes\n"
    _ = text.withCString { write(2, $0, strlen($0)) }
    exit(2)
}

var requestWasHead = false
var splitSeed: UInt64? = nil
var arguments = CommandLine.arguments.dropFirst()
while let argument = arguments.popFirst() {
    switch argument {
    case "--head": requestWasHead = true
    case "--split-seed":
        guard let text = arguments.popFirst(), let seed = UInt64(text) else { usage() }
        splitSeed = seed
    case "-h", "--help": usage()
    default: usage()
    }
}

var input: [UInt8] = []
var chunk = [UInt8](repeating: 0, count: 64 * 1024)
while true {
    let n = chunk.withUnsafeMutableBytes { read(0, $0.baseAddress, $0.count) }
    if n < 0 && errno == EINTR { continue }
    if n <= 0 { break }
    input.append(contentsOf: chunk[0..<n])
}

let pieces: [ArraySlice<UInt8>]
if let seed = splitSeed {
    var splitter = InputSplitter(seed: seed)
    pieces = splitter.pieces(count: input.count).map { input[$0] }
} else {
    pieces = [input[...]]
}
let response = CollectedResponse.parse(pieces: pieces, requestWasHead: requestWasHead)

func jsonString(_ s: String) -> String {
    var out = "\""
    for scalar in s.unicodeScalars {
        switch scalar {
        case "\"": out += "\\\""
        case "\\": out += "\\\\"
        case "\n": out += "\\n"
        case "\r": out += "\\r"
        case "\t": out += "\\t"
        default:
            if scalar.value < 0x20 || scalar.value == 0x7F {
                let hex = String(scalar.value, radix: 16)
                out += "\\u" + String(repeating: "0", count: 4 - hex.count) + hex
            } else {
                out.unicodeScalars.append(scalar)
            }
        }
    }
    return out + "\""
}

func jsonFields(_ fields: HTTPFields) -> String {
    "[" + fields.pairs.map { "[\(jsonString($0.name)),\(jsonString($0.value))]" }.joined(separator: ",") + "]"
}

func base64(_ bytes: [UInt8]) -> String {
    let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/".utf8)
    var out: [UInt8] = []
    out.reserveCapacity((bytes.count + 2) / 3 * 4)
    var i = 0
    while i + 3 <= bytes.count {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8 | UInt32(bytes[i + 2])
        out += [alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)], alphabet[Int(v & 63)]]
        i += 3
    }
    let rest = bytes.count - i
    if rest == 1 {
        let v = UInt32(bytes[i]) << 16
        out += [alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], UInt8(ascii: "="), UInt8(ascii: "=")]
    } else if rest == 2 {
        let v = UInt32(bytes[i]) << 16 | UInt32(bytes[i + 1]) << 8
        out += [alphabet[Int(v >> 18)], alphabet[Int(v >> 12 & 63)], alphabet[Int(v >> 6 & 63)], UInt8(ascii: "=")]
    }
    return String(decoding: out, as: UTF8.self)
}

if let error = response.error {
    print("{\"ok\":false,\"error\":\(jsonString(error.reason)),\"offset\":\(error.offset)}")
} else if let head = response.head, response.isComplete {
    let interim = response.interim.map {
        "{\"status\":\($0.status),\"reason\":\(jsonString($0.reason)),\"headers\":\(jsonFields($0.fields))}"
    }.joined(separator: ",")
    print("{\"ok\":true,\"status\":\(head.status),\"version\":\(jsonString(head.version)),\"reason\":\(jsonString(head.reason)),"
        + "\"headers\":\(jsonFields(head.fields)),\"body_base64\":\"\(base64(response.body))\",\"framing\":\"\(head.framing.name)\","
        + "\"keep_alive\":\(head.keepAlive),\"trailers\":\(jsonFields(response.trailers)),\"interim\":[\(interim)],"
        + "\"consumed\":\(response.consumed)}")
} else {
    // CollectedResponse always ends with an error or a complete response; this is a parser bug.
    print("{\"ok\":false,\"error\":\"internal: response neither complete nor failed\",\"offset\":\(response.consumed)}")
}
