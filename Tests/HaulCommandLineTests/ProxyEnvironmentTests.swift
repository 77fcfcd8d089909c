import HaulCommandLine
import HaulIO
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// ``ProxyEnvironment`` reads only the proxy variables, by their names' bytes: what it gives must be what the
/// whole environment as a dictionary (``ProxySettings/processEnvironment()``) holds under those names.
@Suite struct ProxyEnvironmentTests {
    /// `entries` as an `environ`-style array, for the duration of `body`.
    static func withEnvironment<T>(_ entries: [String], _ body: (UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>) -> T) -> T {
        let strings = entries.map { strdup($0) }
        defer { strings.forEach { free($0) } }
        var array: [UnsafeMutablePointer<CChar>?] = strings + [nil]
        return array.withUnsafeMutableBufferPointer { body($0.baseAddress!) }
    }

    @Test func readsTheProxyVariablesLaterDuplicatesWinning() {
        let entries = [
            "PATH=/usr/bin:/bin", "http_proxy=http://a:1", "HTTP_PROXY=http://ignored:2", "https_proxyX=no",
            "no_proxy=first", "h", "a=b", "no_proxy=second", "NO_PROXY=", "ALL_PROXY=socks5://c:3",
            "https_proxy", "HTTPS_PROXY=http://d:4=5", "all_proxy==x", "n=",
        ]
        let variables = Self.withEnvironment(entries) { ProxyEnvironment.variables(in: $0) }
        #expect(variables == [
            "http_proxy": "http://a:1", "no_proxy": "second", "NO_PROXY": "", "ALL_PROXY": "socks5://c:3",
            "HTTPS_PROXY": "http://d:4=5", "all_proxy": "=x",
        ])
        #expect(Self.withEnvironment([]) { ProxyEnvironment.variables(in: $0) }.isEmpty)
    }

    @Test func matchesTheWholeEnvironmentsDictionary() {
        let whole = ProxySettings.processEnvironment().filter { ProxyEnvironment.names.contains($0.key) }
        #expect(ProxyEnvironment.variables() == whole)
        // And the settings made from either are the same (a proxy variable of the test's own environment, if any).
        #expect((try? ProxySettings.fromEnvironment(ProxyEnvironment.variables())) == (try? ProxySettings.fromProcessEnvironment()))
    }
}
