import Testing
import HaulHTTP
@testable import HaulIO
@testable import Haul

/// Mirrors by measured speed inside the machine (``MirrorSelector``): connections move to a clearly faster
/// mirror at their next request, and a far slower mirror's request is withdrawn from the tail.
extension DownloadStateMachineTests {
    /// 32 MiB from `a` (fast), `m` and `s`, 4 connections, after the mirror checks: connections 0 and 3 on
    /// mirror 0, 1 on mirror 1, 2 on mirror 2, each with the first 4 MiB request of its own 8 MiB segment.
    func threeMirrors() throws -> Machine {
        var machine = try machine(connections: 4, mirrors: ["http://m.test/f", "http://s.test/f"])
        _ = started(&machine)
        _ = arrive(&machine, try partial(0, 4 * Self.mib - 1, of: 32 * Self.mib))
        _ = machine.slotsGranted(2, wanted: 2, for: .mirrorChecks([1, 2]))
        _ = try end(&machine)
        for id in [1, 2] {
            _ = arrive(&machine, try partial(0, 0, of: 32 * Self.mib), on: id)
            _ = try end(&machine, on: id)
        }
        _ = machine.slotsGranted(1, wanted: 1, for: .work)
        return machine
    }

    /// One second: each connection in `written` writes that many bytes, then the tick.
    func second(_ machine: inout Machine, _ written: [Int: Int64]) -> [Action] {
        for (id, count) in written.sorted(by: { $0.key < $1.key }) { _ = machine.bodyWritten(count, on: id) }
        return machine.speedTick(received: [:], readsPaused: [], durableBytes: nil)
    }

    @Test func connectionsStartRoundRobinAndStayUntilMeasured() throws {
        let machine = try threeMirrors()
        #expect(machine.connections.map(\.mirror) == [0, 1, 2, 0])
        #expect(machine.connections.map { $0.exchange?.mirror } == [0, 1, 2, 0])
        #expect(machine.connections.map { $0.exchange?.first } == [0, 8 * Self.mib, 16 * Self.mib, 24 * Self.mib])
    }

    @Test func aConnectionMovesToAClearlyFasterMirrorAtItsNextRequest() throws {
        var machine = try threeMirrors()
        _ = second(&machine, [0: 4 * Self.mib, 3: 4 * Self.mib, 1: 1 * Self.mib, 2: 1 * Self.mib])
        let fastNext = try end(&machine, on: 0)
        #expect(try #require(sends(fastNext).first).mirror == 0, "the fastest mirror keeps its connection")
        _ = second(&machine, [1: 3 * Self.mib, 2: 3 * Self.mib])
        // Mirror 1 wrote 1 and 3 MiB in two seconds on one connection: 2 MiB/s against mirror 0's 4.
        let moved = try #require(sends(try end(&machine, on: 1)).first)
        #expect(moved.mirror == 0 && moved.url == machine.mirrors[0].resolved)
        #expect(moved.first == 12 * Self.mib, "it goes on with its own segment, on the faster mirror")
        #expect(machine.retries == 0)
    }

    @Test func aFarSlowerMirrorsRequestIsWithdrawnFromTheTail() throws {
        var machine = try threeMirrors()
        let kib: Int64 = 1 << 10
        let first = second(&machine, [0: 4 * Self.mib, 3: 4 * Self.mib, 1: 1 * Self.mib, 2: 64 * kib])
        #expect(!has(first) { if case .stop = $0 { true } else { false } }, "one second does not measure the slow mirror")
        _ = try end(&machine, on: 0)
        _ = try end(&machine, on: 3)
        let withdrawn = second(&machine, [0: 4 * Self.mib, 3: 4 * Self.mib, 1: 1 * Self.mib, 2: 64 * kib])
        #expect(has(withdrawn) { if case .stop(connection: 2) = $0 { true } else { false } })
        #expect(!has(withdrawn) { if case .stop(connection: 1) = $0 { true } else { false } }, "a quarter as fast is not far slower")
        // Its exchange ends as the stop's "closed" failure: no retry, its written bytes stay, the rest goes
        // to a fast mirror, on the same connection.
        let next = try end(&machine, on: 2, failure: .incomplete(url: "http://s.test/f", expected: 20 << 20, received: 16 << 20))
        let resent = try #require(sends(next).first { $0.connection == 2 })
        #expect(resent.mirror == 0 && resent.first == 16 * Self.mib + 128 * kib)
        #expect(machine.retries == 0 && machine.connections[2].failuresInRow == 0)
        #expect(machine.connections[2].mirror == 0)
    }

    @Test func oneURLIsNeverWithdrawnFrom() throws {
        var machine = try running(connections: 4)
        _ = machine.slotsGranted(3, wanted: 3, for: .work)
        for _ in 0..<3 {
            let actions = second(&machine, [1: 4 * Self.mib, 2: 4 * Self.mib, 3: 16 << 10])
            #expect(!has(actions) { if case .stop = $0 { true } else { false } })
        }
        #expect(machine.connections.allSatisfy { $0.mirror == 0 })
    }
}
