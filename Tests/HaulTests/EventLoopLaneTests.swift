import Foundation
import HaulTestSupport
import Testing
@testable import Haul

/// A client with several event loops (``DownloadOptions/eventLoops``): downloads at the same time spread over
/// the loops, downloads one after another stay on the first one and its kept-alive connection, and the
/// connection cap is one for all loops.
@Suite(.serialized) struct EventLoopLaneTests {
    let fixture = NginxFixture.shared

    func client(eventLoops: Int, connections: Int = 8, maximumConnections: Int = 64, durable: Bool = false) throws -> HaulClient {
        var options = DownloadOptions(connections: connections, maximumConnections: maximumConnections)
        options.tls.caFile = fixture.ca.caCertificatePath
        options.synchronizesToDisk = durable
        options.eventLoops = eventLoops
        return try HaulClient(options: options)
    }

    /// How many connections each lane's pool opened (read on each lane's loop).
    func connectionsOpened(_ client: HaulClient) async throws -> [Int] {
        var counts: [Int] = []
        for lane in client.lanes {
            let pool = lane.httpClient.pool
            counts.append(try await lane.loop.submit { pool.connectionsOpened })
        }
        return counts
    }

    @Test func aClientHasTheEventLoopsItIsAskedFor() throws {
        #expect(try client(eventLoops: 1).lanes.count == 1)
        #expect(try client(eventLoops: 3).lanes.map(\.index) == [0, 1, 2])
        #expect(try client(eventLoops: 0).lanes.count == 1, "at least one")
        #expect(DownloadOptions().eventLoops == 1, "one loop unless asked")
    }

    /// A list's worth of downloads, 16 at a time as `haul -i LIST -j 16` runs them, over plain HTTP and TLS:
    /// both loops carry transfers (each opened connections of its own), and every file is whole.
    @Test(arguments: [false, true])
    func parallelDownloadsSpreadOverTheLoops(tls: Bool) async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let haul = try client(eventLoops: 2)
        let count = 40, atOnce = 16
        let results = try await withThrowingTaskGroup(of: (Int, DownloadResult).self) { group in
            var next = 0
            func add() {
                let index = next
                next += 1
                let task = haul.start(DownloadRequest(url: fixture.nginx.url("/small-\(index % 5).bin", tls: tls),
                                                      destination: .file(directory + "/f\(index)")))
                group.addTask { (index, try await task.value) }
            }
            while next < atOnce { add() }
            var results: [Int: DownloadResult] = [:]
            for try await (index, result) in group {
                results[index] = result
                if next < count { add() }
            }
            return results
        }
        #expect(results.count == count)
        for index in 0..<count {
            let source = fixture.nginx.dataDirectory + "/small-\(index % 5).bin"
            #expect(try TestFiles.sha256(ofFile: directory + "/f\(index)") == TestFiles.sha256(ofFile: source), "file \(index)")
        }
        #expect(haul.lanes.map(\.started).reduce(0, +) == count)
        #expect(haul.lanes.allSatisfy { $0.started >= atOnce / 2 }, "both loops ran downloads: \(haul.lanes.map(\.started))")
        #expect(haul.lanes.allSatisfy { $0.running == 0 }, "every download left its lane")
        let opened = try await connectionsOpened(haul)
        #expect(opened.allSatisfy { $0 > 0 }, "both loops opened connections: \(opened)")
        #expect(opened.reduce(0, +) <= atOnce + 2, "connections kept alive between files, per loop: \(opened)")
    }

    /// Each lane has a group commit of its own, which gathers its batches knowing the lane's running downloads:
    /// durable downloads 16 at a time on both loops all end whole under their names, none left waiting.
    @Test func durableDownloadsOnBothLoopsEndWholeThroughEachLanesCommit() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let haul = try client(eventLoops: 2, durable: true)
        #expect(haul.lanes[0].commits !== haul.lanes[1].commits, "a commit per lane")
        let count = 40
        try await withThrowingTaskGroup(of: Void.self) { group in
            for index in 0..<count {
                if index >= 16 { try await group.next() }
                let task = haul.start(DownloadRequest(url: fixture.nginx.url("/small-\(index % 5).bin"),
                                                      destination: .file(directory + "/d\(index)")))
                group.addTask { _ = try await task.value }
            }
            try await group.waitForAll()
        }
        for index in 0..<count {
            let source = fixture.nginx.dataDirectory + "/small-\(index % 5).bin"
            #expect(try TestFiles.sha256(ofFile: directory + "/d\(index)") == TestFiles.sha256(ofFile: source), "file \(index)")
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).allSatisfy { !$0.hasSuffix(".part") }, "no .part left")
        #expect(haul.lanes.allSatisfy { $0.started > 0 }, "downloads ran on both loops: \(haul.lanes.map(\.started))")
        #expect(haul.lanes.map(\.commits.batchCount).reduce(0, +) >= 2, "the files went through both lanes' commits")
        #expect(haul.lanes.allSatisfy { $0.running == 0 }, "every download ended")
    }

    /// Each download starting once the previous one ended: all on the first loop, over one connection.
    @Test func downloadsOneAfterAnotherReuseOneConnection() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let haul = try client(eventLoops: 2, connections: 1)
        let before = fixture.nginx.accessLog().count
        for index in 0..<5 {
            let result = try await haul.download(fixture.nginx.url("/small-\(index).bin"), to: directory + "/s\(index)")
            #expect(result.bytes == Int64(100_000 + index))
        }
        let entries = Array(fixture.nginx.accessLog(waitingForCount: before + 5).suffix(5))
        #expect(Set(entries.map(\.connection)).count == 1, "all five requests on one TCP connection")
        #expect(haul.lanes.map(\.started) == [5, 0])
        #expect(try await connectionsOpened(haul) == [1, 0])
    }

    /// Downloads on two loops compete for 3 connection slots: never more than 3 are open, and all come back.
    @Test func theConnectionCapIsOneForAllLoops() async throws {
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let haul = try client(eventLoops: 2, connections: 4, maximumConnections: 3)
        let big = haul.start(DownloadRequest(url: fixture.nginx.url(fixture.bigFile), destination: .file(directory + "/big")))
        let tasks = (0..<6).map { index in
            haul.start(DownloadRequest(url: fixture.nginx.url("/small-\(index % 5).bin"), destination: .file(directory + "/s\(index)")))
        }
        for (index, task) in tasks.enumerated() {
            let result = try await task.value
            #expect(try TestFiles.sha256(ofFile: result.path) == TestFiles.sha256(ofFile: fixture.nginx.dataDirectory + "/small-\(index % 5).bin"))
        }
        _ = try await big.value
        #expect(try TestFiles.sha256(ofFile: directory + "/big") == fixture.bigSHA256)
        #expect(haul.lanes.allSatisfy { $0.started > 0 }, "downloads ran on both loops: \(haul.lanes.map(\.started))")
        #expect(haul.budget.peakInUse <= 3, "the cap was never exceeded")
        #expect(haul.budget.peakInUse == 3, "the downloads did compete for it")
        #expect(poll { haul.budget.inUse == 0 }, "every slot came back")
        #expect(haul.budget.waiting == 0)
    }
}
