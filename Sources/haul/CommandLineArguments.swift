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
enum ChangePolicyArgument: String, RawValueArgument {
    case fail
    case restart

    var policy: ChangePolicy { self == .fail ? .fail : .restart }
}

/// `--progress bar|json|none`.
enum ProgressStyleArgument: String, RawValueArgument {
    case bar
    case json
    case none
}

/// An option's value that is one of a few words, its raw values.
///
/// ArgumentParser's defaults describe the values (for help and completions, but at every start, when it
/// builds its view of the options) with `String(describing:)` of each raw value, and compare each case's
/// description with its raw value's: generic printing, whose dynamic casts the runtime answers the first
/// time by scanning every protocol conformance in the process — about 1 M instructions at each start for
/// these two enums. The raw values themselves are the same text.
protocol RawValueArgument: ExpressibleByArgument, CaseIterable, RawRepresentable<String> {}

extension RawValueArgument {
    static var allValueStrings: [String] { allCases.map(\.rawValue) }
    /// Empty, as ArgumentParser's default finds it: a case's description is its raw value's.
    static var allValueDescriptions: [String: String] { [:] }
    var defaultValueDescription: String { rawValue }
}
