/// Asked for a fresh URL when a download's URL expires mid-download (signed links of object stores, CDNs and
/// release assets): given to ``HaulClient/start(_:logger:refreshingURL:)`` or
/// ``HaulClient/download(_:logger:refreshingURL:)``, as AsyncHTTPClient takes a delegate beside its request.
/// It is not part of ``DownloadRequest``, which stays a `Codable` value.
///
/// It is called with the URL that expired — the one the download was given (or the last one a refresh gave),
/// for a mirror that URL — and the failure: a `401`, `403`, `404` or `410`
/// (``HaulError/Reason/httpStatus(status:reason:url:)``; at the end of a redirect chain too), once the
/// download has begun (a response was accepted as the file, or an interrupted download is being continued).
/// It returns the new URL, or nil to give up: the download then fails with that original error (or, with
/// mirrors left, goes on without the expired one). A ``HaulError`` it throws takes the original error's
/// place; any other error counts as nil.
///
/// The download goes on at the new URL only when what it recorded of the file can prove the new URL serves
/// the same one: a strong `ETag` or a `Last-Modified` date, compared exactly with the length on every answer.
/// Any difference — another length, another or weaker `ETag`, another date, no validator at all, or only a
/// weak `ETag` — is a change, and the request's ``DownloadRequest/ifChangedOnServer`` decides (fail, or start
/// over from the new URL). The bytes already written are kept otherwise. A download asks at most 5 times,
/// and an answer naming the URL that just failed gives up instead of looping. Connections that fail the
/// same way while one refresh is asked for wait for its answer.
///
/// It runs on a task of its own, never on Haul's event loop; a refresher that waits on a process or the
/// network is fine, but should bound how long it waits (the download waits with it). `Authorization`,
/// `Proxy-Authorization` and `Cookie` still go only to the origin of the request's first URL: a fresh URL on
/// another origin gets none of them.
public typealias URLRefresher = @Sendable (_ expired: HTTPURL, _ failure: HaulError) async throws -> HTTPURL?
