import FuzzDriver
import HaulHTTP

/// Content-Disposition comes straight from the server; parsing it must never crash, and the byte and
/// String entry points must agree on valid UTF-8.
func fuzzContentDisposition(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let fromBytes = ContentDisposition(bytes[...])
    if let text = String(validating: bytes, as: UTF8.self) {
        precondition(ContentDisposition(text) == fromBytes, "byte and String parsing disagree")
    }
    return 0
}

@_cdecl("FuzzContentDisposition_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzContentDisposition($0, $1) }
}
