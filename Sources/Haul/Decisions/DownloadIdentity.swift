/// Whether a partial download found at the destination is the one a request asks for.
///
/// A download's identity is its destination and its validators, not the spelling of its URL: the journal
/// keeps the URL the user asked for and the one it resolved to, so running the same command again resumes
/// even when the URL redirects (release assets, CDNs). Another URL — a refreshed signed link, another
/// mirror — continues only under the rule a URL refreshed mid-download follows
/// (``URLRefreshDecision/provesSameFile(_:)``): the journal holds a strong ETag or a `Last-Modified` date.
/// Every resumed range then carries it in `If-Range` and every answer is held to it and the length, so a
/// server with another file is a change and nothing is mixed. Pure.
enum DownloadIdentity: Equatable {
    /// The journal is of this URL.
    case same
    /// The journal is of another URL, but its strong validator will prove (or disprove) that the server
    /// still has the same file; `note` says so to the user.
    case sameValidator(note: String)
    /// Not this download: without a strong ETag or a date there is no way to tell.
    case different(detail: String)

    static func decide(journalURL: String, journalResolvedURL: String?, journalETag: [UInt8]?, journalLastModified: Int64? = nil,
                       requested: HTTPURL) -> DownloadIdentity {
        let asked = requested.description
        if journalURL == asked || journalResolvedURL == asked { return .same }
        let identity = Validators(entityTag: journalETag.flatMap { EntityTag($0[...]) },
                                  lastModified: journalLastModified.map { HTTPDate(secondsSinceEpoch: $0) })
        if URLRefreshDecision.provesSameFile(identity) {
            let shown = identity.hasStrongEntityTag ? "ETag \(identity.entityTag!)" : "Last-Modified \(identity.lastModified!)"
            return .sameValidator(note: "resuming the partial download of \(journalURL) from \(asked): the server must confirm the same file (\(shown)) and length")
        }
        return .different(detail: "this partial download is of \(journalURL), not \(asked), and has no strong ETag or Last-Modified date to prove they are the same file")
    }
}
