import HaulHTTP
import Logging

/// Mirrors by measured speed (``MirrorSelector``): bytes counted per mirror, a connection placed on a mirror
/// before each request, and a far slower mirror's request withdrawn.
extension DownloadStateMachine {
    /// The mirrors still in use.
    var liveMirrors: [Int] { mirrors.indices.filter { !mirrors[$0].dropped } }

    /// Counts `count` bytes written by connection `id` for the mirror its exchange went to.
    mutating func countMirrorBytes(_ count: Int64, on id: Int) {
        guard let mirror = connection(id, { $0.exchange?.mirror }) else { return }
        mirrorSelector.record(count, from: mirror, connection: id)
    }

    /// Before connection `id` asks for its next range: the mirror the selector chooses. A retry stays where
    /// ``FailurePolicy`` put it (its tries count against that mirror); with one mirror nothing changes.
    mutating func placeOnMirror(_ id: Int) {
        // One mirror (the array of live ones not even made): nothing to choose.
        guard mirrors.mirrors.count > 1, connections[id].failuresInRow == 0, rangesSupported, let planner else { return }
        let live = liveMirrors
        guard live.count > 1 else { return }
        // Connections placed round-robin have begun their mirror's trial.
        for connection in connections { mirrorSelector.noteUse(of: connection.mirror) }
        let current = connections[id].mirror
        let chosen = mirrorSelector.choose(current: current, live: live, remaining: planner.remainingBytes,
                                           connections: options.connections)
        connections[id].mirror = chosen
        mirrorSelector.noteUse(of: chosen)
    }

    /// Once a second: the mirrors' bytes become samples (not when haul held reads back itself, `heldBack`),
    /// and requests of a mirror that gets none of the tail are withdrawn when the others would finish
    /// everything before them (``MirrorSelector/withdraws(_:inFlight:among:remaining:connections:)``).
    mutating func measureMirrors(heldBack: Bool) -> [Action] {
        mirrorSelector.tick(counting: !heldBack)
        // A stream's bytes and provisional bodies are not taken from a request half-way.
        guard phase == .running, rangesSupported, sink != .stream, let planner, let total else { return [] }
        let live = liveMirrors
        guard live.count > 1 else { return [] }
        let remaining = planner.remainingBytes
        var actions: [Action] = []
        for connection in connections where connection.isBusy {
            guard let exchange = connection.exchange, exchange.role == .ranged, case .none = connection.verdict,
                  connection.interruption == nil, let segment = connection.segment,
                  let next = planner.next(of: segment), let segmentEnd = planner.end(of: segment) else { continue }
            let inFlight = min(exchange.end ?? total, segmentEnd) - next
            guard mirrorSelector.withdraws(exchange.mirror, inFlight: inFlight, among: live, remaining: remaining,
                                           connections: options.connections) else { continue }
            let id = connection.id
            connections[id].verdict = .withdrawn
            actions.append(.log(.debug, "withdrawing a far slower mirror's request from the tail", {
                [LogKey.connection: "\(id)", LogKey.url: "\(exchange.url)", "haul.bytes.withdrawn": "\(inFlight)"]
            }))
            actions.append(.stop(connection: id))
        }
        return actions
    }

    /// A withdrawn request's exchange ended: the bytes written stay, the rest of its segment goes back to the
    /// planner, and this connection (on a faster mirror now) and any resting one take it up.
    mutating func withdrawnExchangeEnded(_ id: Int) -> [Action] {
        if let segment = connections[id].segment { planner?.release(segment) }
        connections[id].segment = nil
        speedWatch.forget(id)
        return assignWork(id) + wakeIdleConnections()
    }
}
