import Haul
import HaulIO
import HaulSessions
import Testing
@testable import haul

/// How many event loops a `haul` run's client gets: one per core (up to 4) when downloads may run at the same
/// time, else one; a queued task's options keep one.
@Suite struct EventLoopCountCLITests {
    func eventLoops(_ arguments: [String]) throws -> Int {
        let command = try #require(try HaulCommand.parseAsRoot(arguments) as? HaulCommand)
        return try command.plan().options.eventLoops
    }

    var perCore: Int { min(PosixThread.onlineProcessors, 4) }

    @Test func severalDownloadsAtOnceGetALoopPerCore() throws {
        #expect(try eventLoops(["-Z", "-j", "8", "http://a.invalid/x", "http://a.invalid/y"]) == perCore)
        #expect(try eventLoops(["-Z", "http://a.invalid/x", "http://a.invalid/y"]) == perCore, "-j is more than one by default")
    }

    @Test func oneDownloadAtATimeGetsOneLoop() throws {
        #expect(try eventLoops(["http://a.invalid/x"]) == 1)
        #expect(try eventLoops(["-Z", "-j", "8", "http://a.invalid/x"]) == 1, "one download")
        #expect(try eventLoops(["-Z", "-j", "1", "http://a.invalid/x", "http://a.invalid/y"]) == 1, "one at a time")
        #expect(try eventLoops(["http://a.invalid/x", "http://mirror.invalid/x"]) == 1, "mirrors of one download")
    }

    @Test func aQueuedDownloadKeepsOneLoop() throws {
        let spec = try QueueAdd.parse(["-c", "8", "http://a.invalid/x"]).spec()
        #expect(spec.options.downloadOptions(maximumConnections: 64).eventLoops == 1)
    }
}
