import Testing
@testable import Haul

/// Which lane a new download runs on, and how many lanes a run gets.
@Suite struct LaneChoiceTests {
    @Test func oneLaneIsAlwaysTheChoice() {
        #expect(LaneChoice.lane(running: [0]) == 0)
        #expect(LaneChoice.lane(running: [7]) == 0)
    }

    @Test func theLaneWithTheFewestDownloadsRunningIsChosen() {
        #expect(LaneChoice.lane(running: [3, 1]) == 1)
        #expect(LaneChoice.lane(running: [2, 5, 0, 1]) == 2)
        #expect(LaneChoice.lane(running: [1, 1, 1, 0]) == 3)
    }

    @Test func tiesGoToTheLowestIndex() {
        #expect(LaneChoice.lane(running: [0, 0]) == 0)
        #expect(LaneChoice.lane(running: [4, 2, 2]) == 1)
        #expect(LaneChoice.lane(running: [1, 1, 1, 1]) == 0)
    }

    /// Each download starts once the previous one ended: every one lands on lane 0, where the previous one
    /// left its kept-alive connection.
    @Test func downloadsOneAfterAnotherStayOnTheFirstLane() {
        var running = [0, 0, 0]
        for _ in 0..<10 {
            let lane = LaneChoice.lane(running: running)
            #expect(lane == 0)
            running[lane] += 1
            running[lane] -= 1
        }
    }

    /// Downloads started together spread one per lane before any lane gets a second, and one that ends makes
    /// room for the next on its lane.
    @Test func downloadsAtTheSameTimeSpreadEvenly() {
        var running = [0, 0]
        var chosen: [Int] = []
        for _ in 0..<16 {
            let lane = LaneChoice.lane(running: running)
            chosen.append(lane)
            running[lane] += 1
        }
        #expect(chosen == Array(repeating: [0, 1], count: 8).flatMap { $0 })
        #expect(running == [8, 8])
        running[1] -= 1
        #expect(LaneChoice.lane(running: running) == 1, "the next download goes where one just ended")
    }

    @Test func aRunOfOverlappingDownloadsGetsALanePerCoreUpToFour() {
        #expect(LaneChoice.laneCount(downloadsMayOverlap: true, cores: 2) == 2)
        #expect(LaneChoice.laneCount(downloadsMayOverlap: true, cores: 1) == 1)
        #expect(LaneChoice.laneCount(downloadsMayOverlap: true, cores: 64) == 4)
        #expect(LaneChoice.laneCount(downloadsMayOverlap: true, cores: 0) == 1, "an unknown count is one core")
    }

    @Test func aRunOfOneDownloadAtATimeGetsOneLane() {
        #expect(LaneChoice.laneCount(downloadsMayOverlap: false, cores: 2) == 1)
        #expect(LaneChoice.laneCount(downloadsMayOverlap: false, cores: 64) == 1)
    }
}
