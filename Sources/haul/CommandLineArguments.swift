import ArgumentParser
import HaulCommandLine

// The size and rate types live in HaulCommandLine (which knows nothing of ArgumentParser); these
// conformances let options take them directly.

extension ByteSize: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}

extension RateLimit: ExpressibleByArgument {
    public init?(argument: String) { self.init(argument) }
}
