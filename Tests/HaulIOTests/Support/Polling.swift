import Glibc
@testable import HaulIO

// The HaulIO tests wait for conditions, never for a guessed time. (HaulIOTests does not depend on
// HaulTestSupport, whose `poll`/`eventually` these mirror.) Deadlines are generous: they decide how long a
// broken test takes to fail, never whether a working one passes on a busy machine.

/// Polls `condition` every 5 ms until it holds or `seconds` pass; returns whether it held.
func eventually(within seconds: Int = 30, _ condition: () async throws -> Bool) async throws -> Bool {
    let deadline = MonotonicInstant.now().advanced(by: .seconds(seconds))
    while MonotonicInstant.now() < deadline {
        if try await condition() { return true }
        // The polling interval, not an ordering sleep: the loop ends as soon as the condition holds.
        try await Task.sleep(for: .milliseconds(5))
    }
    return try await condition()
}

/// The blocking form of ``eventually(within:_:)``, for synchronous tests and server scripts.
@discardableResult
func poll(within seconds: Int = 30, until condition: () throws -> Bool) rethrows -> Bool {
    let deadline = MonotonicInstant.now().advanced(by: .seconds(seconds))
    while MonotonicInstant.now() < deadline {
        if try condition() { return true }
        // The polling interval, not an ordering sleep.
        usleep(5_000)
    }
    return try condition()
}

/// Where the tests make their temporary files: `$TMPDIR` when set (Scripts/test.sh gives each run a directory of
/// its own there and fails the run if anything named `haul-*` is left in it), else `/tmp`.
func temporaryRoot() -> String {
    guard let value = getenv("TMPDIR").map({ String(cString: $0) }), !value.isEmpty else { return "/tmp" }
    return value.hasSuffix("/") && value.count > 1 ? String(value.dropLast()) : value
}
