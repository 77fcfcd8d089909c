import Synchronization

/// A fixed set of event loops, one OS thread each, handed out round-robin.
///
/// One loop saturates a core with TLS decryption; a group lets downloads spread over the machine's cores while
/// each connection stays on the single loop it was created on.
public final class EventLoopGroup: Sendable {
    /// The loops, in the order ``next()`` cycles through them.
    public let loops: [EventLoop]
    private let cursor = Atomic<Int>(0)

    /// Starts `numberOfThreads` loops (at least one), named `namePrefix-0`, `namePrefix-1`, ...
    public init(numberOfThreads: Int, namePrefix: String = "haul-loop") throws(SystemError) {
        var loops: [EventLoop] = []
        do {
            for index in 0..<max(1, numberOfThreads) {
                loops.append(try EventLoop(name: "\(namePrefix)-\(index)"))
            }
        } catch {
            loops.forEach { $0.shutdown() }
            throw error
        }
        self.loops = loops
    }

    /// The next loop in round-robin order.
    public func next() -> EventLoop {
        let index = cursor.wrappingAdd(1, ordering: .relaxed).oldValue
        return loops[index % loops.count]
    }

    /// Shuts every loop down and waits for their threads. Must not be called from one of the loops.
    public func shutdown() {
        loops.forEach { $0.shutdown() }
    }
}
