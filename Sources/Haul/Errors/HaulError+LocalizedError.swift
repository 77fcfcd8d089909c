#if canImport(FoundationEssentials)
// FoundationEssentials, not Foundation: it declares `LocalizedError` and nothing here needs more. The `haul`
// command links it already (swift-argument-parser imports it), so the conformance costs it nothing.
import FoundationEssentials

/// Foundation's `localizedDescription` reads `errorDescription`: without it a program that logs
/// `error.localizedDescription` gets "The operation could not be completed. (Haul.HaulError error 1.)".
extension HaulError: LocalizedError {
    /// ``description``: what failed, the URL, the tries.
    public var errorDescription: String? { description }
}
#endif
