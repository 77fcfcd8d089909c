import HaulHTTP

/// Which request headers go to which origin: credentials only to the origin they were given for.
///
/// `Authorization`, `Proxy-Authorization` and `Cookie` given by the user — as headers (client-wide or per
/// download), or as user info in a URL (`https://user:pw@host/…`, sent as Basic authorization) — are sent
/// only on requests to the origin (scheme, host and port) they were given with: headers with the download's
/// URL, user info with the URL that carries it. That holds on every request of every connection, and never
/// after a redirect or to a mirror on another origin (curl's CVE-2018-1000007, and CVE-2022-27774 for the
/// scheme and port). Other custom headers go everywhere, as curl sends them across redirects. Pure.
struct CredentialScope: Sendable {
    static let credentialNames: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// What every request carries.
    private let everywhere: HTTPFields
    /// Credentials, by the origin they were given for.
    private let credentials: [HTTPOrigin: HTTPFields]

    /// `headers` were given with a URL of `origin`; each of `urls` may carry user info for its own origin
    /// (used unless the headers already authorize that origin).
    init(headers: HTTPFields, givenFor origin: HTTPOrigin, urls: [HTTPURL] = []) {
        var everywhere = HTTPFields()
        var given = HTTPFields()
        for index in 0..<headers.count {
            if Self.isCredential(headers.name(at: index)) {
                given.append(name: headers.name(at: index), value: headers.value(at: index))
            } else {
                everywhere.append(name: headers.name(at: index), value: headers.value(at: index))
            }
        }
        var credentials: [HTTPOrigin: HTTPFields] = given.isEmpty ? [:] : [origin: given]
        for url in urls {
            guard let userInfo = url.userInfo else { continue }
            var fields = credentials[url.origin] ?? HTTPFields()
            guard !fields.contains("authorization") else { continue }
            fields.append(name: Array("Authorization".utf8), value: Array(BasicAuthorization.fieldValue(userInfo).utf8))
            credentials[url.origin] = fields
        }
        self.everywhere = everywhere
        self.credentials = credentials
    }

    /// The headers a request to `url` carries.
    func headers(for url: HTTPURL) -> HTTPFields {
        guard let own = credentials[url.origin] else { return everywhere }
        var all = everywhere
        for index in 0..<own.count { all.append(name: own.name(at: index), value: own.value(at: index)) }
        return all
    }

    static func isCredential(_ name: ArraySlice<UInt8>) -> Bool {
        credentialNames.contains(latin1String(name).lowercased())
    }
}

/// `Authorization: Basic …` (RFC 7617) from a user and password.
public enum BasicAuthorization {
    /// The field value for URL user info (percent-decoded first, as curl does).
    static func fieldValue(_ userInfo: HTTPURL.UserInfo) -> String {
        fieldValue(user: SuggestedFileName.percentDecoded(userInfo.user),
                   password: userInfo.password.map(SuggestedFileName.percentDecoded) ?? "")
    }

    /// The field value: `Basic ` and the base64 of `user:password` in UTF-8.
    public static func fieldValue(user: String, password: String) -> String {
        "Basic " + base64(Array((user + ":" + password).utf8))
    }

    /// Standard Base64 with padding (HaulHTTP's, which proxies' credentials use too).
    static func base64(_ bytes: [UInt8]) -> String {
        Base64.encode(bytes)
    }
}
