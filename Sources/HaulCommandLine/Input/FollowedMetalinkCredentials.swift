import Haul

/// Which of the run's credentials go with a file of a Metalink document that a server answered with
/// (`--follow-metalink`), decided per file.
///
/// `-u` and credential headers (`-H 'Authorization: …'`, `Cookie`) were given for the URL the user typed.
/// The document is the server's word, and it may list the file on any origin. Credentials therefore go only to
/// the origin of the URL that answered with the document, never to an origin the server chose. (This is curl's
/// rule for redirects, CVE-2018-1000007.) The engine scopes a request's credentials to the origin of its
/// first URL, so the decision is made on the file's first URL:
/// - Same origin: everything goes, as for the document itself.
/// - Another origin: `-u` is left off. A netrc entry is the user's own word for its host and still applies.
///   A credential header cannot be left off one request, because `-H` is run-wide, so the file is refused with
///   both origins named. Use `-M` with the document to send them on purpose.
/// Pure.
public enum FollowedMetalinkCredentials: Equatable, Sendable {
    /// The run's `-u` goes with the file, as it went with the document.
    case withUser
    /// The file is fetched without the run's `-u` (a netrc entry for its host still applies).
    case withoutUser
    /// Fetching the file would send a credential header to an origin the server chose.
    case refused(reason: String)

    /// - Parameters:
    ///   - document: the URL that answered with the Metalink document.
    ///   - file: the first URL the document gives for the file.
    ///   - credentialHeaders: whether the run sends credential headers (`-H 'Authorization: …'`, `Cookie`).
    public static func decide(document: HTTPURL, file: HTTPURL, credentialHeaders: Bool) -> FollowedMetalinkCredentials {
        if file.origin == document.origin { return .withUser }
        guard !credentialHeaders else {
            return .refused(reason: "the Metalink document from \(document.origin) lists it on \(file.origin); the credentials given with -H are not sent to an origin a server chose (use --metalink with the document to send them)")
        }
        return .withoutUser
    }
}
