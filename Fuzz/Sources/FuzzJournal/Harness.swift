import FuzzDriver
import Glibc
import Haul

/// Feeds arbitrary bytes to the resume-journal decoder. Whatever decodes must be a state the encoder can
/// write again (it validates), and must re-encode and decode to the same state, alone and in a file image.
///
/// Input layout: bytes starting with the file magic `HAULJRNL` are a whole journal file image. Otherwise
/// the first byte picks a mode and the rest is the body (so that slots are reachable within libFuzzer's
/// `-max_len=4096`, and the CRC does not hide the payload parser):
/// - 0: the body is one record, decoded alone;
/// - 1: the body is a record *payload*, sealed with a correct CRC, decoded alone and in slot 1 of a file
///   whose slot 0 holds a fixed valid state with an older sequence: the file must give the body's state
///   if it decodes, the fixed state otherwise;
/// - 2: the body is split in two, placed raw in slot 0 and slot 1 behind a valid header;
/// - 3: the body is a whole file image (any first bytes).
func fuzzJournal(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let input = Array(UnsafeBufferPointer(start: data, count: size))
    if input.starts(with: JournalCodec.fileMagic) {
        checkFile(input)
        return 0
    }
    guard let mode = input.first else { return 0 }
    let body = Array(input.dropFirst())
    switch mode & 3 {
    case 0:
        if let record = try? JournalCodec.decodeRecord(body) { check(record.state) }
    case 1:
        let sealed = JournalCodec.seal(payload: body, sequence: 2)
        let alone = try? JournalCodec.decodeRecord(sealed)
        if let alone { check(alone.state) }
        let image = JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(fixedState, sequence: 1),
                                           slot1: sealed.count <= 4096 ? sealed : nil)
        let fromFile = try? JournalCodec.decodeFile(image)
        if let alone, sealed.count <= 4096 {
            precondition(fromFile == alone.state, "file did not pick the newer valid slot")
        } else {
            precondition(fromFile == fixedState, "file did not fall back to the older valid slot")
        }
    case 2:
        let half = body.count / 2
        var image = JournalCodec.fileImage(slotCapacity: 4096, slot0: Array(body[..<half]))
        image += [UInt8](repeating: 0, count: max(0, JournalCodec.slotOffset(1, slotCapacity: 4096) - image.count))
        image += body[half...]
        checkFile(image)
    default:
        checkFile(body)
    }
    return 0
}

let fixedState = JournalState(
    url: "https://example.com/a.iso", mirrors: ["https://m.example.net/a.iso"], etag: Array("\"e\"".utf8),
    lastModified: 1_700_000_000, totalLength: 1 << 30, minimumSegmentSize: 1 << 20,
    checksum: JournalChecksum(algorithm: "sha256", hex: "00"), createdAt: 1_763_000_000,
    durable: ByteRangeSet([0..<4096, 1 << 20..<(1 << 21)])
)

func checkFile(_ image: [UInt8]) {
    if let state = try? JournalCodec.decodeFile(image) { check(state) }
}

/// A decoded state must be writable and round-trip exactly, as a record and as a file.
func check(_ state: JournalState) {
    do {
        try JournalCodec.validate(state)
        let record = JournalCodec.encode(state, sequence: 9)
        let decoded = try JournalCodec.decodeRecord(record)
        precondition(decoded.sequence == 9 && decoded.state == state, "record round trip changed the state")
        let capacity = JournalCodec.slotCapacity(forRecordOf: record.count)!
        let image = JournalCodec.fileImage(slotCapacity: capacity, slot0: record)
        let fromFile = try JournalCodec.decodeFile(image)
        precondition(fromFile == state, "file round trip changed the state")
    } catch {
        preconditionFailure("decoded state does not re-encode: \(error)")
    }
}

/// `HAUL_FUZZ_JOURNAL_SEEDS=DIR FuzzJournal` writes the seed corpus (valid journals) to DIR and exits.
func writeSeeds(to directory: String) {
    let many = ByteRangeSet((0..<200).map { Int64($0) * 5_000_000 + 17..<(Int64($0) * 5_000_000 + 3_000_000) })
    var big = fixedState
    big.totalLength = 1 << 40
    big.durable = many
    let plain = JournalState(url: "http://h/f", totalLength: 100, minimumSegmentSize: 10, createdAt: 0,
                             durable: ByteRangeSet([0..<10, 50..<60]))
    let seeds: [(String, [UInt8])] = [
        ("file-one-slot", JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(fixedState))),
        ("file-two-slots", JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(plain, sequence: 3),
                                                  slot1: JournalCodec.encode(fixedState, sequence: 4))),
        ("record", [0] + JournalCodec.encode(big)),
        ("payload-full", [1] + JournalCodec.encodePayload(fixedState)),
        ("payload-plain", [1] + JournalCodec.encodePayload(plain)),
    ]
    for (name, bytes) in seeds {
        let path = directory + "/" + name
        let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        precondition(fd >= 0, "cannot create \(path)")
        precondition(bytes.withUnsafeBytes { write(fd, $0.baseAddress!, $0.count) } == bytes.count)
        close(fd)
    }
}

@_cdecl("FuzzJournal_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    if let directory = getenv("HAUL_FUZZ_JOURNAL_SEEDS") {
        writeSeeds(to: String(cString: directory))
        return 0
    }
    return haul_fuzz_run(argc, argv) { fuzzJournal($0, $1) }
}
