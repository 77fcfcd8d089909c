import Foundation
import Haul
import HaulTestSupport
import Testing
@testable import HaulSessions

/// Records a session log typically holds, in an order the state accepts.
enum SampleLog {
    static let spec: TaskSpec = {
        var spec = TaskSpec(url: "https://example.org/a.iso", mirrors: ["https://mirror.example.net/a.iso"],
                            destination: .file("/data/a.iso"))
        spec.checksum = try! Checksum("sha256=" + String(repeating: "ab", count: 32))
        spec.headers = [TaskHeader(name: "X-Token", value: "t\u{e9}st")]
        spec.options.connections = 4
        spec.options.rateLimit = 1 << 20
        spec.options.lowSpeedLimit = LowSpeedLimit(bytesPerSecond: 1000, seconds: 10)
        spec.options.synchronizesToDisk = false
        spec.hook = "echo done >> /tmp/x"
        return spec
    }()

    static func event(_ sequence: UInt64, _ task: Int, _ kind: SessionEvent.Kind) -> SessionEvent {
        SessionEvent(sequence: sequence, time: 1_700_000_000_000 + Int64(sequence), task: task, kind: kind)
    }

    static var records: [LogRecord] {
        let part = PartIdentity(path: "/data/a.iso", device: 2049, inode: 1234)
        return [
            .settings(SessionSettings(jobs: 2, maximumConnections: 16, hook: nil)),
            .event(event(1, 1, .added(url: spec.url, path: "/data/a.iso", directory: nil)), spec: spec, part: nil),
            .event(event(2, 2, .added(url: "http://h/b", path: nil, directory: "/data")),
                   spec: TaskSpec(url: "http://h/b", destination: .directory("/data")), part: nil),
            .event(event(3, 1, .started(bytes: 0, total: nil)), spec: nil, part: part),
            .event(event(4, 2, .started(bytes: 0, total: nil)), spec: nil, part: nil),
            .part(task: 2, PartIdentity(path: "/data/b", device: 2049, inode: 99)),
            .event(event(5, 1, .paused(bytes: 1 << 20, total: 1 << 30)), spec: nil, part: nil),
            .acknowledged(consumer: "default", sequence: 3),
            .event(event(6, 2, .failed(TaskFailure(HaulError(.httpStatus(status: 404, reason: "Not Found", url: "http://h/b"), url: "http://h/b")))), spec: nil, part: nil),
            .event(event(7, 1, .resumed), spec: nil, part: nil),
            .event(event(8, 1, .started(bytes: 1 << 20, total: 1 << 30)), spec: nil, part: part),
            .event(event(9, 1, .completed(path: "/data/a.iso", bytes: 1 << 30, digest: spec.checksum!.description, recovered: false)),
                   spec: nil, part: nil),
            .hookStarted(task: 1),
            .event(event(10, 1, .hook(status: 0)), spec: nil, part: nil),
            .event(event(11, 2, .cancelled), spec: nil, part: nil),
            .acknowledged(consumer: "default", sequence: 11),
        ]
    }

    static func fileImage(_ records: [LogRecord]) -> [UInt8] {
        var bytes = SessionLogCodec.header()
        for (index, record) in records.enumerated() {
            bytes += SessionLogCodec.record(number: UInt64(index + 1), payload: record.payload)
        }
        return bytes
    }
}

/// The session log: framing, torn tails, corruption, the folded state.
@Suite struct SessionLogTests {
    @Test func recordsRoundTripThroughTheirPayloads() throws {
        for record in SampleLog.records {
            #expect(try LogRecord(payload: record.payload) == record, "\(record.json.serialized)")
        }
    }

    @Test func theFoldFollowsTheRecords() throws {
        let state = try SessionState.replay(SampleLog.records)
        #expect(state.tasks.count == 2)
        #expect(state.lastSequence == 11)
        #expect(state.settings == SessionSettings(jobs: 2, maximumConnections: 16))
        #expect(state.acknowledgements == ["default": 11])
        let first = try #require(state.task(1))
        #expect(first.state == .completed && first.starts == 2)
        #expect(first.completion?.path == "/data/a.iso" && first.completion?.sequence == 9)
        #expect(first.hook == .finished(status: 0))
        #expect(first.spec == SampleLog.spec)
        let second = try #require(state.task(2))
        #expect(second.state == .cancelled && second.part?.inode == 99)
        #expect(state.events(after: 9).map(\.sequence) == [10, 11])
        #expect(state.events(after: 0).count == 11)
        #expect(state.events(after: 40).isEmpty)
    }

    @Test func aRecordThatDoesNotFollowIsRefusedAndChangesNothing() throws {
        var state = try SessionState.replay(Array(SampleLog.records.prefix(5)))
        let before = state
        let refused: [LogRecord] = [
            .event(SampleLog.event(7, 1, .resumed), spec: nil, part: nil),                      // sequence out of turn
            .event(SampleLog.event(5, 3, .started(bytes: 0, total: nil)), spec: nil, part: nil),  // no task 3
            .event(SampleLog.event(5, 4, .added(url: "http://h/c", path: "/c", directory: nil)),
                   spec: TaskSpec(url: "http://h/c", destination: .file("/c")), part: nil),         // task 4 before 3
            .event(SampleLog.event(5, 1, .resumed), spec: nil, part: nil),                        // resume a running task
            .event(SampleLog.event(5, 1, .hook(status: 0)), spec: nil, part: nil),                // hook never started
            .hookStarted(task: 1),                                                                // nothing owed
            .acknowledged(consumer: "default", sequence: 9),                                      // beyond the last event
            .part(task: 9, PartIdentity(path: "/x", device: 1, inode: 1)),
        ]
        for record in refused {
            #expect(throws: SessionStateError.self, "\(record.json.serialized)") { try state.apply(record) }
            #expect(state.lastSequence == before.lastSequence && state.recordCount == before.recordCount)
        }
        try state.apply(.acknowledged(consumer: "cli", sequence: 4))
        #expect(throws: SessionStateError.self) { try state.apply(.acknowledged(consumer: "cli", sequence: 3)) }
    }

    @Test func aCompletedTaskCannotCompleteOrStartAgain() throws {
        var state = try SessionState.replay(SampleLog.records)
        for kind: SessionEvent.Kind in [.completed(path: "/data/a.iso", bytes: 1, digest: "sha256=00", recovered: true),
                                        .started(bytes: 0, total: nil), .failed(.legacy(message: "x", className: "network", code: 3)),
                                        .cancelled, .paused(bytes: 0, total: nil)] {
            #expect(throws: SessionStateError.self) { try state.apply(.event(SampleLog.event(12, 1, kind), spec: nil, part: nil)) }
        }
    }

    /// `removed` takes an ended task off the list; nothing but its hook may follow, and a live task cannot
    /// be removed.
    @Test func onlyAnEndedTaskIsRemovedAndNothingButItsHookFollows() throws {
        var state = try SessionState.replay(Array(SampleLog.records.prefix(10)))
        #expect(state.task(1)?.state == .queued)
        #expect(throws: SessionStateError.self, "task 1 is queued") {
            try state.apply(.event(SampleLog.event(8, 1, .removed), spec: nil, part: nil))
        }
        #expect(state.task(2)?.state == .failed)
        try state.apply(.event(SampleLog.event(8, 2, .removed), spec: nil, part: nil))
        #expect(state.task(2)?.removed == true && state.task(1)?.removed == false)
        for kind: SessionEvent.Kind in [.resumed, .cancelled, .removed] {
            #expect(throws: SessionStateError.self, "\(kind)") { try state.apply(.event(SampleLog.event(9, 2, kind), spec: nil, part: nil)) }
        }
        let record = LogRecord.event(SampleLog.event(9, 1, .removed), spec: nil, part: nil)
        #expect(try LogRecord(payload: record.payload) == record)
        #expect(record.json.serialized.contains(#""type":"removed""#))

        // A completed task whose hook is still running may be removed; the hook's event still lands.
        var completed = try SessionState.replay(Array(SampleLog.records.prefix(13)))
        try completed.apply(.event(SampleLog.event(10, 1, .removed), spec: nil, part: nil))
        try completed.apply(.event(SampleLog.event(11, 1, .hook(status: 0)), spec: nil, part: nil))
        #expect(completed.task(1)?.hook == .finished(status: 0))
    }

    @Test func scanningAWholeFileGivesEveryRecord() throws {
        let image = SampleLog.fileImage(SampleLog.records)
        let scan = try SessionLogCodec.scan(image)
        #expect(scan.records.count == SampleLog.records.count)
        #expect(scan.validEnd == image.count && scan.tornTail == nil)
        #expect(try scan.records.map { try LogRecord(payload: $0.payload) } == SampleLog.records)
    }

    /// A crash at any moment of an append leaves a prefix of the appended bytes (or zeros where the file
    /// grew but the data did not land): every such file reads as exactly the records before the torn one.
    @Test func everyTornTailReadsAsTheRecordsBeforeIt() throws {
        let records = SampleLog.records
        let image = SampleLog.fileImage(records)
        var ends = [SessionLogCodec.headerSize]
        for index in records.indices { ends.append(ends[index] + records[index].payload.count + SessionLogCodec.recordOverhead) }
        for length in SessionLogCodec.headerSize...image.count {
            let complete = ends.lastIndex { $0 <= length }!
            for tail in [Array(image[..<length]), Array(image[..<length]) + [UInt8](repeating: 0, count: min(64, image.count - length))] {
                let scan = try SessionLogCodec.scan(tail)
                #expect(scan.records.count == complete, "cut at \(length)")
                #expect(scan.validEnd == ends[complete])
                #expect((scan.tornTail == nil) == (tail.count == ends[complete]), "cut at \(length): \(scan.tornTail ?? "")")
            }
        }
    }

    @Test func damageBeforeAValidRecordIsCorruptionNotATornTail() throws {
        let image = SampleLog.fileImage(SampleLog.records)
        let second = SessionLogCodec.headerSize + SampleLog.records[0].payload.count + SessionLogCodec.recordOverhead
        for offset in [SessionLogCodec.headerSize, SessionLogCodec.headerSize + 5, second - 3, second + 20] {
            var damaged = image
            damaged[offset] ^= 0x40
            #expect(throws: SessionLogFormatError.self, "byte \(offset)") { try SessionLogCodec.scan(damaged) }
        }
        // The same damage in the last record is a torn tail: nothing after it was ever acknowledged.
        var last = image
        last[image.count - 6] ^= 0x40
        let scan = try SessionLogCodec.scan(last)
        #expect(scan.records.count == SampleLog.records.count - 1 && scan.tornTail != nil)
    }

    @Test func aMissingOrRepeatedRecordIsRefusedEvenWithGoodChecksums() throws {
        var bytes = SessionLogCodec.header()
        bytes += SessionLogCodec.record(number: 1, payload: SampleLog.records[0].payload)
        bytes += SessionLogCodec.record(number: 3, payload: SampleLog.records[1].payload)
        #expect(throws: SessionLogFormatError.self) { try SessionLogCodec.scan(bytes) }
        var repeated = SessionLogCodec.header()
        repeated += SessionLogCodec.record(number: 1, payload: SampleLog.records[0].payload)
        repeated += SessionLogCodec.record(number: 1, payload: SampleLog.records[0].payload)
        #expect(throws: SessionLogFormatError.self) { try SessionLogCodec.scan(repeated) }
    }

    /// docs/sessions.md shows these bytes.
    @Test func theHeaderAndARecordAreTheBytesTheDocumentationShows() throws {
        func hex(_ bytes: [UInt8]) -> String {
            bytes.map { String($0, radix: 16).count == 1 ? "0" + String($0, radix: 16) : String($0, radix: 16) }.joined(separator: " ")
        }
        #expect(hex(SessionLogCodec.header()) == "48 41 55 4c 53 45 53 53 01 00 00 00 c3 08 52 ef")
        let record = LogRecord.acknowledged(consumer: "default", sequence: 3)
        #expect(String(decoding: record.payload, as: UTF8.self) == #"{"r":"ack","consumer":"default","seq":3}"#)
        let bytes = SessionLogCodec.record(number: 7, payload: record.payload)
        #expect(hex(Array(bytes.prefix(16))) == "48 53 52 45 28 00 00 00 07 00 00 00 00 00 00 00")
        #expect(hex(Array(bytes.suffix(4))) == "5c a2 a3 74")
    }

    @Test func headerProblemsAreNamed() throws {
        var header = SessionLogCodec.header()
        #expect(header.count == 16 && Array(header[0..<8]) == Array("HAULSESS".utf8))
        header[8] = 2
        let unsupported = #expect(throws: SessionLogFormatError.self) { try SessionLogCodec.decodeHeader(header) }
        #expect(unsupported?.isUnsupported == true)
        var damaged = SessionLogCodec.header()
        damaged[13] ^= 1
        let mismatch = #expect(throws: SessionLogFormatError.self) { try SessionLogCodec.decodeHeader(damaged) }
        #expect(mismatch?.reason.contains("header checksum mismatch") == true)
        #expect(throws: SessionLogFormatError.self) { try SessionLogCodec.decodeHeader(Array("HAULSESS".utf8)) }
    }

    @Test func aRecordWithAGoodChecksumButABadPayloadIsCorrupt() throws {
        let directory = try TemporaryDirectory(prefix: "haul-session-log")
        let path = directory.file("session.haul")
        var bytes = SessionLogCodec.header()
        bytes += SessionLogCodec.record(number: 1, payload: Array(#"{"r":"event","event":{"seq":1}}"#.utf8))
        try Data(bytes).write(to: URL(fileURLWithPath: path))
        let error = #expect(throws: SessionError.self) { try SessionLogFile.open(path: path) }
        guard case .corruptState(let errorPath, _, let reason)? = error else { Issue.record("\(String(describing: error))"); return }
        #expect(errorPath == path && reason.contains("record 1"), "\(reason)")
        #expect(FileManager.default.contents(atPath: path) == Data(bytes), "a corrupt log is not touched")
    }

    @Test func theFileAppendsSyncsAndCutsATornTailOnOpen() throws {
        let directory = try TemporaryDirectory(prefix: "haul-session-log")
        let path = directory.file("session.haul")
        let opened = try SessionLogFile.open(path: path)
        #expect(opened.created && opened.state.tasks.isEmpty)
        let records = SampleLog.records
        try opened.file.append(Array(records.prefix(4)), firstNumber: 1)
        try opened.file.append(Array(records.dropFirst(4)), firstNumber: 5)
        let size = opened.file.end
        // A torn append after the last acknowledged record.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.seekToEnd()
        try handle.write(contentsOf: Data(SessionLogCodec.record(number: UInt64(records.count + 1), payload: records[0].payload).prefix(30)))
        try handle.close()
        let again = try SessionLogFile.open(path: path)
        #expect(!again.created && again.tornTail != nil)
        #expect(again.state.recordCount == UInt64(records.count) && again.state.lastSequence == 11)
        #expect(again.file.end == size)
        #expect((try FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) == size, "the torn tail is cut off")
        let read = try SessionLogFile.read(path: path)
        #expect(read.tornTail == nil && read.state.recordCount == UInt64(records.count))
        let mode = (try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int) ?? 0
        #expect(mode == 0o600)
    }
}
