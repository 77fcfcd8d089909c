import HaulHTTP

/// The URLs one file is fetched from, and what each has shown of itself.
///
/// Each mirror keeps the URL the user gave and the one it resolved to after redirects: later ranges go
/// straight to the resolved URL, and when that starts failing (signed CDN links expire) the mirror goes
/// back to the given URL and follows its redirects again. Every request is built here, so the credential
/// rule of ``CredentialScope`` holds for every request of every connection, whatever URL it goes to.
struct MirrorSet: Sendable {
    struct Mirror: Sendable, Equatable {
        /// As the user gave it, or as a URL refresher replaced it (``MirrorSet/refresh(_:to:)``).
        fileprivate(set) var given: HTTPURL
        /// Where requests go now.
        var resolved: HTTPURL
        var validators = Validators()
        /// Whether the mirror's length was checked against the download's.
        var verified = false
        var dropped = false
        /// Times the mirror went back to its given URL after the resolved one failed.
        var reResolutions = 0

        init(given: HTTPURL) {
            self.given = given
            self.resolved = given
        }

        /// Whether requests now go somewhere a redirect led to.
        var isRedirected: Bool { resolved != given }
    }

    /// Most times one mirror goes back to its given URL; past that its failures count as usual.
    static let maximumReResolutions = 3

    private(set) var mirrors: [Mirror]
    let scope: CredentialScope
    let userAgent: String

    /// `urls[0]` is the primary URL; `headers` are the user's, credentials among them.
    init(urls: [HTTPURL], headers: HTTPFields, userAgent: String) {
        precondition(!urls.isEmpty, "a download needs a URL")
        mirrors = urls.map(Mirror.init(given:))
        scope = CredentialScope(headers: headers, givenFor: urls[0].origin, urls: urls)
        self.userAgent = userAgent
    }

    // Read in place (`_read`): a getter returned a copy of the whole mirror — two URLs and its validators,
    // every string in them retained — for a caller that reads one field of it, per request.
    subscript(index: Int) -> Mirror {
        _read { yield mirrors[index] }
    }
    var indices: Range<Int> { mirrors.indices }
    var primary: Mirror {
        _read { yield mirrors[0] }
    }

    /// The request for `range` on `mirror`, to `url` (the mirror's resolved URL unless a redirect chain
    /// is under way), with `If-Range` when the range continues bytes already written; without `range`, the
    /// whole file in one response.
    func request(to url: HTTPURL, range: RangeRequest?, ifRange: IfRangeValidator?) -> RequestHead {
        RequestHead(method: .get, url: url, range: range, ifRange: ifRange, userAgent: userAgent,
                    headers: scope.headers(for: url))
    }

    mutating func noteRedirect(_ mirror: Int, to url: HTTPURL) {
        mirrors[mirror].resolved = url
    }

    /// After a failure at the resolved URL: go back to the given one. False when there is nothing to go
    /// back from, or the mirror has done so too often.
    mutating func reResolve(_ mirror: Int) -> Bool {
        guard mirrors[mirror].isRedirected, mirrors[mirror].reResolutions < Self.maximumReResolutions else { return false }
        mirrors[mirror].resolved = mirrors[mirror].given
        mirrors[mirror].reResolutions += 1
        return true
    }

    func canReResolve(_ mirror: Int) -> Bool {
        mirrors[mirror].isRedirected && mirrors[mirror].reResolutions < Self.maximumReResolutions
    }

    /// A refresher replaced the mirror's expired URL: requests go to `url`, and a later failure at a URL it
    /// redirects to goes back to `url`. What the mirror showed of the file (validators, length) stays: the
    /// new URL's responses are held to it.
    mutating func refresh(_ mirror: Int, to url: HTTPURL) {
        mirrors[mirror].given = url
        mirrors[mirror].resolved = url
        mirrors[mirror].reResolutions = 0
    }

    mutating func record(_ validators: Validators, for mirror: Int) {
        mirrors[mirror].validators = validators
        mirrors[mirror].verified = true
    }

    /// Forgets every mirror's validators (the download starts over).
    mutating func forgetValidators() {
        for index in mirrors.indices {
            mirrors[index].validators = Validators()
            mirrors[index].verified = false
        }
    }

    /// Takes the mirror out of use; the next live one, or nil when none is left.
    mutating func drop(_ mirror: Int) -> Int? {
        mirrors[mirror].dropped = true
        return mirrors.indices.first { !mirrors[$0].dropped }
    }

    var hasLiveMirror: Bool { mirrors.contains { !$0.dropped } }

    /// Whether a mirror other than `mirror` is still in use.
    func hasOtherLiveMirror(than mirror: Int) -> Bool {
        mirrors.indices.contains { $0 != mirror && !mirrors[$0].dropped }
    }

    /// Spreads connections over the mirrors still in use.
    func mirror(forConnection id: Int) -> Int {
        // One mirror (nearly every download): it, dropped or not, as below, without an array of one.
        guard mirrors.count > 1 else { return 0 }
        let live = mirrors.indices.filter { !mirrors[$0].dropped }
        return live.isEmpty ? 0 : live[id % live.count]
    }
}
