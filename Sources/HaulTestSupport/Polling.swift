import Foundation
import Glibc

/// Waiting for a condition instead of guessing how long it takes.
///
/// Tests never sleep to put things in order: they name the condition they wait for (the journal exists, the
/// server has read every byte, the progress passed N bytes) and poll it under a deadline. The deadline is
/// generous on purpose — it only decides how long a broken test takes to fail, never whether a working one
/// passes on a busy machine — so it must never be used as a timing assertion (speed belongs in Benchmarks/).
public enum Polling {
    /// How long ``poll(every:within:until:)`` and ``eventually(every:within:_:)`` wait unless told otherwise.
    public static let defaultDeadline: Double = 30
    /// How often they look. Short, since a look is cheap and the condition usually holds within milliseconds.
    public static let defaultInterval: Duration = .milliseconds(5)

    static func microseconds(_ interval: Duration) -> useconds_t {
        let (seconds, attoseconds) = interval.components
        return useconds_t(max(0, seconds * 1_000_000 + attoseconds / 1_000_000_000_000))
    }
}

/// Polls `condition` on the calling thread every `interval` until it holds or `seconds` pass; returns whether
/// it held (it is looked at once more at the deadline).
///
/// It blocks the thread, so synchronous tests and fixtures use it; async code uses ``eventually(every:within:_:)``,
/// which leaves the shared cooperative pool free while it waits.
@discardableResult
public func poll(
    every interval: Duration = Polling.defaultInterval, within seconds: Double = Polling.defaultDeadline,
    until condition: () throws -> Bool
) rethrows -> Bool {
    // The monotonic clock: a step of the wall clock (NTP) must not end the wait early or stretch it.
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try condition() { return true }
        // The polling interval itself, not an ordering sleep: the loop ends as soon as the condition holds.
        usleep(Polling.microseconds(interval))
    }
    return try condition()
}

/// Polls `read()` until its value satisfies `condition` or `seconds` pass; returns the last value read
/// (for the failure message when it never did).
public func poll<Value>(
    every interval: Duration = Polling.defaultInterval, within seconds: Double = Polling.defaultDeadline,
    reading read: () throws -> Value, until condition: (Value) throws -> Bool
) rethrows -> Value {
    var value = try read()
    _ = try poll(every: interval, within: seconds) {
        value = try read()
        return try condition(value)
    }
    return value
}

/// The async form of ``poll(every:within:until:)``: suspends between looks instead of blocking a thread.
@discardableResult
public func eventually(
    every interval: Duration = Polling.defaultInterval, within seconds: Double = Polling.defaultDeadline,
    _ condition: () async throws -> Bool
) async rethrows -> Bool {
    let deadline = ContinuousClock.now + .milliseconds(Int64(seconds * 1000))
    while ContinuousClock.now < deadline {
        if try await condition() { return true }
        // The polling interval itself, not an ordering sleep (a cancelled task just looks again sooner).
        try? await Task.sleep(for: interval)
    }
    return try await condition()
}
