/// Which request headers go to which origin: credentials only to the origin they were given for.
///
/// `Authorization`, `Proxy-Authorization` and `Cookie` given by the user are sent only on requests to the
/// origin (scheme, host and port) of the download's URL — on every request of every connection, and never
/// after a redirect or to a mirror on another origin (curl's CVE-2018-1000007, and CVE-2022-27774 for the
/// scheme and port). Other custom headers go everywhere, as curl sends them across redirects. Pure.
struct CredentialScope: Sendable {
    static let credentialNames: Set<String> = ["authorization", "proxy-authorization", "cookie"]

    /// The origin the credentials were given for.
    let origin: HTTPOrigin
    private let everywhere: HTTPFields
    private let all: HTTPFields

    init(headers: HTTPFields, givenFor origin: HTTPOrigin) {
        self.origin = origin
        self.all = headers
        var everywhere = HTTPFields()
        for index in 0..<headers.count where !Self.isCredential(headers.name(at: index)) {
            everywhere.append(name: headers.name(at: index), value: headers.value(at: index))
        }
        self.everywhere = everywhere
    }

    /// The headers a request to `url` carries.
    func headers(for url: HTTPURL) -> HTTPFields {
        url.origin == origin ? all : everywhere
    }

    static func isCredential(_ name: ArraySlice<UInt8>) -> Bool {
        credentialNames.contains(latin1String(name).lowercased())
    }
}
