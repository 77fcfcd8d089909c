import FuzzDriver
import Haul

/// A Metalink document comes from the network (`-M URL`) or from whoever wrote the file: parsing must never
/// crash, whatever the bytes, and what it accepts must hold what the parser promises — at least one file,
/// every name safe to create under the download directory, only http(s) URLs in priority order, hashes in
/// lowercase hex, piece counts that cover the size — and must make a request (or a clear error) without trapping.
func fuzzMetalink(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard let data else { return 0 }
    let bytes = Array(UnsafeBufferPointer(start: data, count: size))
    let metalink: Metalink
    do { metalink = try Metalink(parsing: bytes) } catch {
        precondition(error.offset >= 0 && error.offset <= bytes.count, "error offset \(error.offset) outside the input")
        return 0
    }
    precondition(!metalink.files.isEmpty, "a Metalink accepted without files")
    for file in metalink.files {
        precondition(MetalinkFile.checkedName(file.name) == file.name, "unsafe name accepted: \(file.name)")
        precondition(!file.name.hasPrefix("/") && !file.name.split(separator: "/").contains(".."), "unsafe name accepted: \(file.name)")
        let priorities = file.urls.map { $0.priority ?? Int.max }
        precondition(priorities == priorities.sorted(), "URLs out of priority order")
        for url in file.urls {
            let lowered = url.url.lowercased()
            precondition(lowered.hasPrefix("http://") || lowered.hasPrefix("https://"), "non-http URL kept: \(url.url)")
        }
        for hash in file.hashes { precondition(hash.hex == hash.hex.lowercased() && hash.hex.allSatisfy(\.isHexDigit)) }
        if let size = file.size, let pieces = file.pieces {
            precondition(Int64(pieces.hashes.count) == (size == 0 ? 0 : (size - 1) / pieces.length + 1), "pieces do not cover the size")
        }
        if let request = try? DownloadRequest(metalink: file, directory: "out") {
            precondition(request.destination == .file("out/" + file.name))
            precondition(request.checksum == file.strongestChecksum)
            precondition(request.expectedSize == file.size, "the request does not carry the file's size")
        } else {
            precondition(file.urls.isEmpty, "a file with URLs made no request")
        }
    }
    return 0
}

@_cdecl("FuzzMetalink_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzMetalink($0, $1) }
}
