import Foundation
import Glibc
import Testing
import HaulTestSupport

/// Syncs that fetch only what changed: `-N` asks with the validators stored with the file (a 304 keeps it,
/// "up to date"), a changed file is fetched again, `-R` gives the file the server's time.
extension HaulCLITests {
    /// A file of its own in nginx's root (the fixture is shared), with a given content and time.
    private func serve(_ name: String, byte: UInt8, modified: Date) throws {
        let path = fixture.nginx.dataDirectory + "/" + name
        try Data(repeating: byte, count: 300_000).write(to: URL(fileURLWithPath: path))
        try FileManager.default.setAttributes([.modificationDate: modified], ofItemAtPath: path)
    }

    private func requests(for target: String) -> [AccessLogEntry] {
        fixture.nginx.accessLog().filter { $0.target == target }
    }

    @Test func timestampingFetchesOnlyAChangedFile() throws {
        let directory = try scratch()
        let name = "cond-\(UUID().uuidString).bin"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: fixture.nginx.dataDirectory + "/" + name)
        }
        try serve(name, byte: 1, modified: Date(timeIntervalSince1970: 1_600_000_000))
        let url = fixture.nginx.url("/" + name)
        let path = directory + "/" + name

        let first = try haul(["-N", url], in: directory)
        #expect(first.exitStatus == 0, "\(first.errorText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(repeating: 1, count: 300_000))
        let firstCount = poll(reading: { requests(for: "/" + name) }, until: { !$0.isEmpty }).count

        // Unchanged: one conditional request, answered 304 with no body; the file stays.
        let second = try haul(["-N", url], in: directory)
        #expect(second.exitStatus == 0, "\(second.errorText)")
        #expect(second.errorText.contains("\(name): up to date"), "\(second.errorText)")
        let afterSecond = poll(reading: { requests(for: "/" + name) }, until: { $0.count > firstCount })
        let notModified = afterSecond.dropFirst(firstCount)
        #expect(notModified.count == 1 && notModified.allSatisfy { $0.status == 304 && $0.bodyBytesSent == 0 },
                "\(notModified.map { ($0.status, $0.bodyBytesSent) })")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(repeating: 1, count: 300_000))
        #expect(!FileManager.default.fileExists(atPath: path + ".part"), "the 304's run leaves nothing behind")

        // Changed on the server (new content, new time): fetched again and replaced.
        try serve(name, byte: 2, modified: Date(timeIntervalSince1970: 1_700_000_000))
        let third = try haul(["-N", url], in: directory)
        #expect(third.exitStatus == 0, "\(third.errorText)")
        #expect(!third.errorText.contains("up to date"), "\(third.errorText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(repeating: 2, count: 300_000))
        let afterThird = poll(reading: { requests(for: "/" + name) }, until: { $0.count > afterSecond.count })
        #expect(afterThird.dropFirst(afterSecond.count).contains { $0.status == 200 || $0.status == 206 })
    }

    /// A list of 100 files synced twice: the second run is one conditional request per file, each a 304
    /// without a body, over keep-alive connections.
    @Test func aListSyncedTwiceFetchesNoBodyTheSecondTime() throws {
        let directory = try scratch()
        let prefix = "sync-\(UUID().uuidString)-"
        let names = (0..<100).map { prefix + "\($0).bin" }
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            for name in names { try? FileManager.default.removeItem(atPath: fixture.nginx.dataDirectory + "/" + name) }
        }
        for (index, name) in names.enumerated() {
            try serve(name, byte: UInt8(index), modified: Date(timeIntervalSince1970: 1_600_000_000 + Double(index)))
        }
        let list = directory + "/list.txt"
        try names.map { fixture.nginx.url("/" + $0) }.joined(separator: "\n").write(toFile: list, atomically: true, encoding: .utf8)
        let ours = { fixture.nginx.accessLog().filter { $0.target.hasPrefix("/" + prefix) } }

        let first = try haul(["-N", "-i", list, "-d", directory + "/out"])
        #expect(first.exitStatus == 0, "\(first.errorText)")
        let firstCount = poll(reading: ours, until: { $0.count >= names.count }).count
        let second = try haul(["-N", "-i", list, "-d", directory + "/out"])
        #expect(second.exitStatus == 0, "\(second.errorText)")
        #expect(second.errorText.components(separatedBy: ": up to date").count - 1 == names.count, "\(second.errorText)")
        let secondRun = poll(reading: ours, until: { $0.count >= firstCount + names.count }).dropFirst(firstCount)
        #expect(secondRun.count == names.count, "one request per file")
        #expect(secondRun.allSatisfy { $0.status == 304 && $0.bodyBytesSent == 0 }, "\(secondRun.map { ($0.status, $0.bodyBytesSent) })")
        #expect(Set(secondRun.map(\.connection)).count < names.count, "the 304s share keep-alive connections")
        for (index, name) in names.enumerated() {
            #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/out/" + name)) == Data(repeating: UInt8(index), count: 300_000))
        }
    }

    @Test func remoteTimeGivesTheFileTheServersTime() throws {
        let directory = try scratch()
        let name = "remote-\(UUID().uuidString).bin"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: fixture.nginx.dataDirectory + "/" + name)
        }
        let modified = Date(timeIntervalSince1970: 1_500_000_000)
        try serve(name, byte: 3, modified: modified)
        let run = try haul(["-R", "-o", directory + "/r.bin", fixture.nginx.url("/" + name)])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        let attributes = try FileManager.default.attributesOfItem(atPath: directory + "/r.bin")
        #expect((attributes[.modificationDate] as? Date) == modified)
        let plain = try haul(["-o", directory + "/p.bin", fixture.nginx.url("/" + name)])
        #expect(plain.exitStatus == 0, "\(plain.errorText)")
        let plainTime = try FileManager.default.attributesOfItem(atPath: directory + "/p.bin")[.modificationDate] as? Date
        #expect(plainTime != modified, "without -R the file has its own time")
    }

    /// A server that answers 304 to a request that asked nothing: never "up to date", never a file.
    @Test func a304NobodyAskedForFailsTheDownload() throws {
        let directory = try scratch()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let server = try MisbehavingServer(resource: .pattern(size: 1000), script: .always(.status(304)))
        defer { server.stop() }
        let run = try haul(["--retries", "0", "-o", directory + "/x.bin", server.url("/f")])
        #expect(run.exitStatus != 0, "\(run.errorText)")
        #expect(run.errorText.contains("304 Not Modified to a request that asked no condition"), "\(run.errorText)")
        #expect(!run.errorText.contains("up to date"))
        #expect(!FileManager.default.fileExists(atPath: directory + "/x.bin"))
    }

    /// curl's `-z DATE`: `If-Modified-Since` with the date; a 304 is "up to date" (exit 0, nothing written),
    /// a 200 downloads. Every HTTP-date form; `-z -DATE` and a non-date are refused before anything is sent.
    @Test func timeConditionWithADateFetchesOnlyANewerFile() throws {
        let directory = try scratch()
        let name = "since-\(UUID().uuidString).bin"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: fixture.nginx.dataDirectory + "/" + name)
        }
        try serve(name, byte: 4, modified: Date(timeIntervalSince1970: 1_600_000_000))   // Sun, 13 Sep 2020 12:26:40 GMT
        let url = fixture.nginx.url("/" + name)
        let path = directory + "/since.bin"

        // Not modified since the date: nothing fetched, nothing written. nginx answers 304 by default only to
        // its exact time (`if_modified_since exact`), given here in each HTTP-date form; its /since/ location
        // (`if_modified_since before`) to any later date too.
        let notModified = [("/", "Sun, 13 Sep 2020 12:26:40 GMT"), ("/", "Sunday, 13-Sep-20 12:26:40 GMT"),
                           ("/", "Sun Sep 13 12:26:40 2020"), ("/since/", "Wed, 01 Sep 2021 12:00:00 GMT")]
        for (location, date) in notModified {
            let before = requests(for: location + name).count
            let run = try haul(["-z", date, "-o", path, fixture.nginx.url(location + name)])
            #expect(run.exitStatus == 0, "\(date): \(run.errorText)")
            #expect(run.errorText.contains("up to date"), "\(run.errorText)")
            #expect(!FileManager.default.fileExists(atPath: path) && !FileManager.default.fileExists(atPath: path + ".part"))
            let answered = poll(reading: { requests(for: location + name) }, until: { $0.count > before }).dropFirst(before)
            #expect(answered.count == 1 && answered.allSatisfy { $0.status == 304 && $0.bodyBytesSent == 0 }, "\(answered.map(\.status))")
        }

        // Modified since an earlier date: downloaded.
        let before = requests(for: "/" + name).count
        let run = try haul(["-z", "Tue, 01 Sep 2020 12:00:00 GMT", "-o", path, url])
        #expect(run.exitStatus == 0, "\(run.errorText)")
        #expect(!run.errorText.contains("up to date"), "\(run.errorText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: path)) == Data(repeating: 4, count: 300_000))
        let answered = poll(reading: { requests(for: "/" + name) }, until: { $0.count > before }).dropFirst(before)
        #expect(answered.contains { $0.status == 200 || $0.status == 206 }, "\(answered.map(\.status))")

        // The file is there now, and the date is older than the server's: replaced, as curl does.
        let again = try haul(["-z", "Tue, 01 Sep 2020 12:00:00 GMT", "-o", path, url])
        #expect(again.exitStatus == 0, "\(again.errorText)")
    }

    @Test func timeConditionRefusesUnmodifiedSinceAndNonDates() throws {
        // A query of this test's own (nginx ignores it): the shared server's log holds other tests' requests too.
        let marker = "refused=\(UUID().uuidString)"
        let url = fixture.nginx.url("/f0.bin?" + marker)
        let unmodified = try haul(["-z", "-Wed, 21 Oct 2015 07:28:00 GMT", "-o", "x.bin", url])
        #expect(unmodified.exitStatus == 2, "\(unmodified.errorText)")
        #expect(unmodified.errorText.contains("unmodified since"), "\(unmodified.errorText)")
        let garbage = try haul(["-z", "next tuesday", "-o", "x.bin", url])
        #expect(garbage.exitStatus == 2, "\(garbage.errorText)")
        #expect(garbage.errorText.contains("-z/--time-cond") && garbage.errorText.contains("next tuesday"), "\(garbage.errorText)")
        #expect(!fixture.nginx.accessLog().contains { $0.target.hasSuffix(marker) }, "refused before anything is sent")
    }

    /// `-N -o DIR/`: the file is named from the URL before the request, so the second run asks about it.
    @Test func timestampingIntoADirectoryAsksAboutTheFileNamedByTheURL() throws {
        let directory = try scratch()
        let name = "dircond-\(UUID().uuidString).bin"
        defer {
            try? FileManager.default.removeItem(atPath: directory)
            try? FileManager.default.removeItem(atPath: fixture.nginx.dataDirectory + "/" + name)
        }
        try serve(name, byte: 5, modified: Date(timeIntervalSince1970: 1_600_000_000))
        let url = fixture.nginx.url("/" + name)
        let first = try haul(["-N", "-o", directory + "/out/", url])
        #expect(first.exitStatus == 0, "\(first.errorText)")
        #expect(try Data(contentsOf: URL(fileURLWithPath: directory + "/out/" + name)) == Data(repeating: 5, count: 300_000))
        let before = poll(reading: { requests(for: "/" + name) }, until: { !$0.isEmpty }).count
        let second = try haul(["-N", "-o", directory + "/out/", url])
        #expect(second.exitStatus == 0, "\(second.errorText)")
        #expect(second.errorText.contains("\(name): up to date"), "\(second.errorText)")
        let answered = poll(reading: { requests(for: "/" + name) }, until: { $0.count > before }).dropFirst(before)
        #expect(answered.count == 1 && answered.allSatisfy { $0.status == 304 && $0.bodyBytesSent == 0 }, "\(answered.map(\.status))")
    }
}
