import Glibc
import HaulCommandLine
import Testing

/// What any sequence of SIGINT, SIGTERM and SIGHUP does (``StopSignalPolicy``), and that the C handler's
/// table is that policy.
@Suite struct StopSignalPolicyTests {
    typealias Policy = StopSignalPolicy

    @Test func theFirstSignalOfAnyKindBeginsTheStop() {
        for signal in Policy.Signal.allCases {
            #expect(Policy.action(for: signal, in: .running) == .beginStop)
            #expect(Policy.ending(of: [.signal(signal)]) == .afterPause)
        }
        #expect(Policy.Signal(number: SIGHUP) == .hangUp && Policy.Signal(number: SIGINT) == .interrupt
                && Policy.Signal(number: SIGTERM) == .terminate && Policy.Signal(number: SIGUSR1) == nil)
    }

    /// `timeout -s INT` signals haul, then its process group: the two arrive before haul has said anything.
    @Test func aSignalDeliveredTwiceBeforeTheAcknowledgementIsOneStop() {
        #expect(Policy.ending(of: [.signal(.interrupt), .signal(.interrupt), .acknowledged, .pauseFinished]) == .afterPause)
        #expect(Policy.ending(of: [.signal(.hangUp), .signal(.hangUp), .signal(.terminate), .acknowledged]) == .afterPause)
    }

    @Test func aSecondInterruptOrTerminateAfterTheAcknowledgementExitsAtOnce() {
        #expect(Policy.ending(of: [.signal(.interrupt), .acknowledged, .signal(.interrupt)]) == .atOnce(afterEvent: 2))
        #expect(Policy.ending(of: [.signal(.hangUp), .acknowledged, .signal(.terminate)]) == .atOnce(afterEvent: 2))
        #expect(Policy.ending(of: [.signal(.terminate), .acknowledged, .signal(.hangUp), .signal(.interrupt)]) == .atOnce(afterEvent: 3))
    }

    /// A hang-up is no request to quit: nobody saw the prompt. The pause under way ends by itself.
    @Test func aHangUpNeverExitsAtOnce() {
        for first in Policy.Signal.allCases {
            #expect(Policy.ending(of: [.signal(first), .acknowledged, .signal(.hangUp), .signal(.hangUp), .pauseFinished]) == .afterPause)
        }
    }

    /// Every sequence of up to three signals, with the acknowledgement and the end of the pause anywhere in
    /// between: it ends after the pause unless an INT or TERM came after the acknowledgement.
    @Test func everySequenceOfUpToThreeSignals() {
        let signals = Policy.Signal.allCases
        var sequences: [[Policy.Signal]] = [[]]
        for _ in 0..<3 { sequences += sequences.filter { $0.count == sequences.map(\.count).max()! }.flatMap { s in signals.map { s + [$0] } } }
        for sequence in sequences where !sequence.isEmpty {
            for acknowledgedAfter in 0...sequence.count {
                var events = sequence.map { Policy.Event.signal($0) }
                events.insert(.acknowledged, at: acknowledgedAfter)
                // The first INT or TERM after an acknowledgement that followed a signal (one before any has no effect).
                let quitting = events.indices.first { index in
                    guard acknowledgedAfter >= 1, case .signal(let signal) = events[index], signal != .hangUp, index > acknowledgedAfter else { return false }
                    return events[..<index].contains { if case .signal = $0 { true } else { false } }
                }
                let ending = Policy.ending(of: events)
                if let quitting {
                    #expect(ending == .atOnce(afterEvent: quitting), "\(events)")
                } else {
                    #expect(ending == .afterPause, "\(events)")
                }
            }
        }
    }

    /// `timeout` sends the same signal twice (to haul, then to its group) from one pid; a terminal's Ctrl-C
    /// pressed twice is two requests.
    @Test func aCopyOfTheFirstSignalFromTheSameSenderIsTheSameDelivery() {
        let timeout = Policy.Sender(code: Int32(SI_USER), pid: 4242)
        #expect(Policy.isSameDelivery((.interrupt, timeout), as: (.interrupt, timeout), after: .milliseconds(1)))
        #expect(!Policy.isSameDelivery((.interrupt, timeout), as: (.interrupt, timeout), after: .seconds(1)), "a second kill later")
        #expect(!Policy.isSameDelivery((.terminate, timeout), as: (.interrupt, timeout), after: .milliseconds(1)))
        #expect(!Policy.isSameDelivery((.interrupt, .init(code: Int32(SI_USER), pid: 7)), as: (.interrupt, timeout), after: .milliseconds(1)))
        let terminal = Policy.Sender(code: Int32(SI_KERNEL), pid: 0)
        #expect(!Policy.isSameDelivery((.interrupt, terminal), as: (.interrupt, terminal), after: .milliseconds(1)))
    }

    @Test func theHandlersTableIsThePolicy() {
        let table = Policy.table
        #expect(table.count == 9)
        for phase in Policy.Phase.allCases {
            for signal in Policy.Signal.allCases {
                #expect(table[phase.rawValue * 3 + signal.rawValue] == Policy.action(for: signal, in: phase).rawValue)
            }
        }
    }
}
