import ArgumentParser
import Haul
import HaulCommandLine

// The size and rate types live in HaulCommandLine (which knows nothing of ArgumentParser); these
// conformances let options take them directly.

extension ByteSize: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

extension RateLimit: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

extension RateLimitSetting: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

/// `--on-change fail|restart`.
enum ChangePolicyArgument: String, ExpressibleByArgument, CaseIterable {
    case fail
    case restart

    var policy: ChangePolicy { self == .fail ? .fail : .restart }
}

/// `--progress bar|json|none`.
enum ProgressStyleArgument: String, ExpressibleByArgument, CaseIterable {
    case bar
    case json
    case none
}
