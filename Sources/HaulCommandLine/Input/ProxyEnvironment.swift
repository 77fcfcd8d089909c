#if canImport(Glibc)
import Glibc
#endif
import HaulIO

/// The proxy variables of the environment, the only ones ``ProxySettings/forCommandLine(proxy:noProxy:environment:)``
/// reads, for each start of `haul`.
///
/// ``ProxySettings/processEnvironment()`` makes a `[String: String]` of every variable, splitting each at its
/// first `=` Character: ~0.6 M instructions at every start with a shell's 40-odd variables (grapheme breaking
/// through `PATH` and `LS_COLORS`, hashing each name), more with a desktop's. This looks at each variable's
/// name in bytes and makes Strings of the seven proxy variables only. As there, an entry without `=` is
/// skipped and a later duplicate wins.
public enum ProxyEnvironment {
    /// The variables ``ProxySettings/fromEnvironment(_:)`` reads (`HTTP_PROXY` is not one of them: curl
    /// ignores it, see there).
    public static let names = ["http_proxy", "https_proxy", "HTTPS_PROXY", "all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY"]

    /// The proxy variables of this process's environment (`environ`).
    public static func variables() -> [String: String] {
        let environment: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        guard let environment else { return [:] }
        return variables(in: environment)
    }

    /// The proxy variables of `environment`, an `environ`-style array of `NAME=value` C strings ending with nil.
    public static func variables(in environment: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> [String: String] {
        var result: [String: String] = [:]
        var entry = environment
        while let pointer = entry.pointee {
            entry += 1
            // Every name starts with one of these; most variables are passed over at their first byte.
            switch UInt8(bitPattern: pointer[0]) {
            case UInt8(ascii: "h"), UInt8(ascii: "H"), UInt8(ascii: "a"), UInt8(ascii: "A"), UInt8(ascii: "n"), UInt8(ascii: "N"): break
            default: continue
            }
            for name in names {
                let length = name.utf8.count
                // strncmp stops at the entry's end, so a shorter entry is not read past.
                if name.withCString({ strncmp(pointer, $0, length) }) == 0, pointer[length] == CChar(UInt8(ascii: "=")) {
                    result[name] = String(cString: pointer + length + 1)
                    break
                }
            }
        }
        return result
    }
}
