import FuzzDriver
import Glibc
import HaulJournal

/// Feeds arbitrary bytes to the resume-journal decoder. Whatever decodes must be a state the encoder can
/// write again (it validates), and must re-encode and decode to the same state, alone and in a file image;
/// and its trusted ranges must follow its boot id (all of them in its own boot, none in another).
/// Format versions 1 and 2 are both reached: the version is in the bytes (seeds of both are written), and
/// version 2's optional fields (resolved URL, boot id) are in the seeds and in the fixed state.
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
    durable: ByteRangeSet([0..<4096, 1 << 20..<(1 << 21)]),
    resolvedURL: "https://cdn.example.net/x/a.iso?sig=1",
    bootID: Array("0f1e2d3c-4b5a-6978-8796-a5b4c3d2e1f0".utf8)
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
    precondition(state.trustedDurable(currentBootID: state.bootID) == state.durable, "own boot must trust the ranges")
    if let bootID = state.bootID {
        precondition(state.trustedDurable(currentBootID: bootID + [0]) == ByteRangeSet(), "another boot trusted the ranges")
        precondition(state.trustedDurable(currentBootID: nil) == ByteRangeSet(), "an unknown boot trusted the ranges")
    } else {
        precondition(state.trustedDurable(currentBootID: nil) == state.durable, "synced ranges must always be trusted")
    }
}

/// `payload` (version 2, without the version 2 fields) relabelled as version 1: the two layouts are then
/// the same bytes but for the version.
func version1Payload(_ state: JournalState) -> [UInt8] {
    var plain = state
    plain.resolvedURL = nil
    plain.bootID = nil
    var payload = JournalCodec.encodePayload(plain)
    payload[0] = 1
    return payload
}

/// A whole file image with a version 1 header (its CRC recomputed) and one version 1 record.
func version1File(_ state: JournalState) -> [UInt8] {
    var image = JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.seal(payload: version1Payload(state), sequence: 1))
    image[8] = 1
    let crc = CRC32C.checksum(image[0..<16])
    for index in 0..<4 { image[16 + index] = UInt8(truncatingIfNeeded: crc >> (8 * UInt32(index))) }
    return image
}

/// `HAUL_FUZZ_JOURNAL_SEEDS=DIR FuzzJournal` writes the seed corpus (valid journals) to DIR and exits.
func writeSeeds(to directory: String) {
    let many = ByteRangeSet((0..<200).map { Int64($0) * 5_000_000 + 17..<(Int64($0) * 5_000_000 + 3_000_000) })
    var big = fixedState
    big.totalLength = 1 << 40
    big.durable = many
    let plain = JournalState(url: "http://h/f", totalLength: 100, minimumSegmentSize: 10, createdAt: 0,
                             durable: ByteRangeSet([0..<10, 50..<60]))
    var resolvedOnly = plain
    resolvedOnly.resolvedURL = "http://h2/f"
    var bootOnly = plain
    bootOnly.bootID = Array("69d3a8a1-4d3c-45f2-b7a6-5a4487b55e57".utf8)
    let seeds: [(String, [UInt8])] = [
        ("file-one-slot", JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(fixedState))),
        ("file-two-slots", JournalCodec.fileImage(slotCapacity: 4096, slot0: JournalCodec.encode(plain, sequence: 3),
                                                  slot1: JournalCodec.encode(fixedState, sequence: 4))),
        ("record", [0] + JournalCodec.encode(big)),
        ("payload-full", [1] + JournalCodec.encodePayload(fixedState)),
        ("payload-plain", [1] + JournalCodec.encodePayload(plain)),
        ("payload-resolved-url", [1] + JournalCodec.encodePayload(resolvedOnly)),
        ("payload-boot-id", [1] + JournalCodec.encodePayload(bootOnly)),
        ("v1-payload-full", [1] + version1Payload(fixedState)),
        ("v1-file-one-slot", version1File(fixedState)),
    ]
    for (name, bytes) in seeds {
        // Every seed must be valid, so that the fuzzer starts from journals that decode.
        let decodes: Bool = if name.hasPrefix("payload") || name.hasPrefix("v1-payload") {
            (try? JournalCodec.decodeRecord(JournalCodec.seal(payload: Array(bytes.dropFirst()), sequence: 1))) != nil
        } else if name == "record" {
            (try? JournalCodec.decodeRecord(Array(bytes.dropFirst()))) != nil
        } else {
            (try? JournalCodec.decodeFile(bytes)) != nil
        }
        precondition(decodes, "seed \(name) does not decode")
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
