import FuzzDriver
import HaulHTTP

/// Proxy settings come from the command line and the environment: a proxy URL and a NO_PROXY list must
/// never crash their parsers, and what they accept must read back as itself. The input is
/// "proxy-url\nno-proxy-list\nhost".
func fuzzProxySettings(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    let text = String(decoding: UnsafeBufferPointer(start: data, count: size), as: UTF8.self)
    let parts = text.split(separator: "\n", maxSplits: 2, omittingEmptySubsequences: false).map(String.init)
    if let proxy = try? ProxyURL(parts[0]) {
        // The proxy's address, written out, names the same proxy.
        let again = try? ProxyURL("\(proxy.scheme.rawValue)://\(proxy.host.uriText):\(proxy.port)")
        precondition(again?.host == proxy.host && again?.port == proxy.port && again?.scheme == proxy.scheme,
                     "\(proxy) does not read back")
    }
    if parts.count > 1 {
        let list = NoProxyList(parts[1])
        let again = NoProxyList(list.description)
        // Printable text (what a flag or an environment variable carries) reads back as itself; anything
        // else must merely not crash.
        if parts[1].utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) {
            precondition(again.entries == list.entries, "\"\(list)\" does not read back")
        }
        if parts.count > 2, let url = try? HTTPURL("http://" + parts[2] + "/") {
            _ = list.bypasses(url.origin)
        }
    }
    return 0
}

@_cdecl("FuzzProxySettings_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzProxySettings($0, $1) }
}
