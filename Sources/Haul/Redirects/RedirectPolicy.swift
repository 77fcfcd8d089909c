import HaulHTTP

/// How redirects are followed: which statuses, how many hops, and what may cross origins.
public struct RedirectPolicy: Sendable, Hashable {
    /// Most redirects followed for one download.
    public var maxRedirects: Int
    /// Whether an https URL may redirect to plain http (off: a downgrade exposes the download).
    public var allowsHTTPSDowngrade: Bool

    /// Follows up to `maxRedirects` hops; https→http only when `allowsHTTPSDowngrade`.
    public init(maxRedirects: Int = 10, allowsHTTPSDowngrade: Bool = false) {
        self.maxRedirects = maxRedirects
        self.allowsHTTPSDowngrade = allowsHTTPSDowngrade
    }

    /// Statuses that redirect a GET or HEAD (RFC 9110 §15.4).
    public static let redirectStatuses: Set<Int> = [301, 302, 303, 307, 308]

    /// Where a redirect (`status` with `location`) from `url` leads. `visited` is the chain so far — the
    /// URLs one request has been sent to, starting with the first — and gains the target; each request
    /// follows its own chain, so several connections redirected to the same place is not a loop.
    public func target(status: Int, location: String?, from url: HTTPURL, visited: inout [HTTPURL]) throws(RedirectError) -> HTTPURL {
        guard let location else { throw RedirectError(.missingLocation(status: status), at: url) }
        let target: HTTPURL
        do {
            target = try url.resolve(location)
        } catch {
            throw RedirectError(.invalidLocation(location, error), at: url)
        }
        if url.scheme == .https && target.scheme == .http && !allowsHTTPSDowngrade {
            throw RedirectError(.insecureDowngrade(to: target), at: url)
        }
        if visited.contains(target) {
            throw RedirectError(.loop(chain: visited + [target]), at: url)
        }
        guard visited.count <= maxRedirects else {
            throw RedirectError(.tooMany(limit: maxRedirects), at: url)
        }
        visited.append(target)
        return target
    }

    /// The request to send after `head` redirected `request`, or nil when `head` is not a redirect; see
    /// ``target(status:location:from:visited:)``. Credential headers are dropped when the target is on
    /// another origin (the download engine applies the same rule to every request it builds).
    package func follow(_ head: ResponseHead, from request: RequestHead, visited: inout [HTTPURL]) throws(RedirectError) -> RequestHead? {
        guard Self.redirectStatuses.contains(head.status) else { return nil }
        let target = try target(status: head.status, location: head.fields.firstString("location"), from: request.url, visited: &visited)
        var next = request
        next.url = target
        if target.origin != request.url.origin {
            var kept = HTTPFields()
            for index in 0..<request.headers.count where !CredentialScope.isCredential(request.headers.name(at: index)) {
                kept.append(name: request.headers.name(at: index), value: request.headers.value(at: index))
            }
            next.headers = kept
        }
        return next
    }
}

/// A redirect that could not be followed, with the URL that sent it.
public struct RedirectError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong.
    public enum Reason: Sendable, Equatable {
        case missingLocation(status: Int)
        case invalidLocation(String, URLParseError)
        case insecureDowngrade(to: HTTPURL)
        case loop(chain: [HTTPURL])
        case tooMany(limit: Int)
    }

    /// What went wrong.
    public let reason: Reason
    /// The URL whose response redirected.
    public let url: HTTPURL

    /// An error for `reason` at `url`.
    public init(_ reason: Reason, at url: HTTPURL) {
        self.reason = reason
        self.url = url
    }

    public var description: String {
        switch reason {
        case .missingLocation(let status): "redirect \(status) from \(url) has no Location"
        case .invalidLocation(let location, let error): "redirect from \(url) to invalid Location \"\(location)\": \(error)"
        case .insecureDowngrade(let target): "refusing redirect from \(url) to insecure \(target)"
        case .loop(let chain): "redirect loop: " + chain.map(\.description).joined(separator: " -> ")
        case .tooMany(let limit): "more than \(limit) redirects (last from \(url))"
        }
    }
}
