import Glibc
import HaulHTTP

/// Which proxy each origin is reached through: one for `http://` origins, one for `https://` origins, and the
/// hosts that bypass both.
///
/// ```swift
/// // As curl reads the environment (http_proxy, https_proxy/HTTPS_PROXY, all_proxy/ALL_PROXY, no_proxy/NO_PROXY):
/// var settings = try ProxySettings.fromEnvironment(environment)
/// // `-x URL`: one proxy for every scheme (the environment's NO_PROXY still applies, as in curl):
/// settings.useForAllSchemes(try ProxyURL("socks5h://user:secret@proxy.example:1080"))
/// // `--noproxy LIST` replaces the environment's list:
/// settings.noProxy = NoProxyList("localhost,127.0.0.1,.internal.example")
/// ```
public struct ProxySettings: Sendable, Hashable {
    /// The proxy for plain-HTTP origins.
    public var http: ProxyURL?
    /// The proxy for HTTPS origins.
    public var https: ProxyURL?
    /// Hosts reached directly whatever the proxies say.
    public var noProxy: NoProxyList

    /// Settings from their parts; the default uses no proxy at all.
    public init(http: ProxyURL? = nil, https: ProxyURL? = nil, noProxy: NoProxyList = NoProxyList()) {
        self.http = http
        self.https = https
        self.noProxy = noProxy
    }

    /// One proxy for every scheme (what curl's `-x URL` does); `nil` for none.
    public init(all proxy: ProxyURL?, noProxy: NoProxyList = NoProxyList()) {
        self.init(http: proxy, https: proxy, noProxy: noProxy)
    }

    /// No proxy for anything.
    public static let direct = ProxySettings()

    /// Whether no origin goes through a proxy.
    public var isDirect: Bool { http == nil && https == nil }

    /// Sets one proxy for every scheme (curl's `-x URL`), keeping ``noProxy``; `nil` turns proxies off (curl's
    /// `-x ""`).
    public mutating func useForAllSchemes(_ proxy: ProxyURL?) {
        http = proxy
        https = proxy
    }

    /// The proxy for `origin`, or `nil` when it is reached directly (no proxy for its scheme, or ``noProxy``
    /// lists it).
    public func proxy(for origin: HTTPOrigin) -> ProxyURL? {
        let candidate = origin.scheme == .https ? https : http
        guard let candidate, !noProxy.bypasses(origin) else { return nil }
        return candidate
    }

    /// Reads the proxy variables the way curl does:
    /// - `http_proxy` for `http://` origins — lowercase only: `HTTP_PROXY` is ignored, because CGI servers put
    ///   a request's `Proxy:` header there ("httpoxy");
    /// - `https_proxy`, else `HTTPS_PROXY`, for `https://` origins;
    /// - `all_proxy`, else `ALL_PROXY`, for either when its own variable is not set;
    /// - `no_proxy`, else `NO_PROXY`, the hosts that bypass them (see ``NoProxyList``).
    ///
    /// A variable set to the empty string counts as unset. A malformed or unsupported proxy URL is an error
    /// naming the variable, e.g. `unsupported proxy scheme "socks4" in ALL_PROXY="socks4://127.0.0.1:1080"`.
    public static func fromEnvironment(_ environment: [String: String]) throws(ProxyConfigurationError) -> ProxySettings {
        func value(_ names: String...) -> (name: String, value: String)? {
            for name in names {
                if let value = environment[name], !value.allSatisfy({ $0 == " " || $0 == "\t" }) { return (name, value) }
            }
            return nil
        }
        func proxy(_ names: String...) throws(ProxyConfigurationError) -> ProxyURL? {
            var found: (name: String, value: String)?
            for name in names {
                if let entry = value(name) {
                    found = entry
                    break
                }
            }
            guard let found else { return nil }
            do {
                return try ProxyURL(found.value)
            } catch {
                throw error.from(found.name)
            }
        }
        let all = try proxy("all_proxy", "ALL_PROXY")
        let http = try proxy("http_proxy") ?? all
        let https = try proxy("https_proxy", "HTTPS_PROXY") ?? all
        let noProxy = value("no_proxy", "NO_PROXY").map { NoProxyList($0.value) } ?? NoProxyList()
        return ProxySettings(http: http, https: https, noProxy: noProxy)
    }

    /// What curl makes of `-x/--proxy URL`, `--noproxy LIST` and the environment, for a command line:
    /// - without `proxy`, the environment's proxies as ``fromEnvironment(_:)`` reads them;
    /// - `proxy` (when given) is the proxy for every scheme and the environment's proxy variables are not read
    ///   at all; an empty `proxy` turns proxies off;
    /// - `noProxy` (when given) replaces the environment's `no_proxy`/`NO_PROXY`, which otherwise applies (also
    ///   to `proxy`); an empty one bypasses nothing.
    ///
    /// Errors name their source: `--proxy` or the environment variable.
    public static func forCommandLine(proxy: String?, noProxy: String?,
                                      environment: [String: String]) throws(ProxyConfigurationError) -> ProxySettings {
        var settings: ProxySettings
        if let proxy {
            settings = try fromEnvironment(environment.filter { $0.key == "no_proxy" || $0.key == "NO_PROXY" })
            if !proxy.allSatisfy({ $0 == " " || $0 == "\t" }) {
                do {
                    settings.useForAllSchemes(try ProxyURL(proxy))
                } catch {
                    throw error.from("--proxy")
                }
            }
        } else {
            settings = try fromEnvironment(environment)
        }
        if let noProxy { settings.noProxy = NoProxyList(noProxy) }
        return settings
    }

    /// ``fromEnvironment(_:)`` applied to this process's environment.
    public static func fromProcessEnvironment() throws(ProxyConfigurationError) -> ProxySettings {
        try fromEnvironment(processEnvironment())
    }

    /// This process's environment variables (read from `environ`; later duplicates win).
    public static func processEnvironment() -> [String: String] {
        var result: [String: String] = [:]
        var entry: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = environ
        guard entry != nil else { return result }
        while let current = entry, let pointer = current.pointee {
            let text = String(cString: pointer)
            if let equals = text.firstIndex(of: "=") {
                result[String(text[..<equals])] = String(text[text.index(after: equals)...])
            }
            entry = current + 1
        }
        return result
    }
}
