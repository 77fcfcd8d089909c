/// Reads the Metalink document a download's first answer turned out to be (``DownloadRequest/followsMetalink``,
/// ``MetalinkResponseDecision``): fetched again into memory, bounded, and parsed as hostile input.
enum MetalinkFollowing {
    /// The document `request` led to, as the result the download ends with (``DownloadResult/isMetalink``).
    ///
    /// Asked of the request's own URL, with its headers and credentials, so that redirects are followed with
    /// the same scoping as the download's (credentials only to the URL's origin). The answer must again be a
    /// Metalink document: a server that says so once and not twice is not followed.
    static func read(_ request: DownloadRequest, documentURL: HTTPURL, client: HaulClient) async -> Result<DownloadResult, HaulError> {
        let limit = MetalinkLimits().maximumBytes
        let fetch = DownloadRequest(url: request.url, destination: .memory(limit: limit), headers: request.headers,
                                    credentials: request.credentials)
        var result: DownloadResult
        do {
            result = try await client.download(fetch)
        } catch where error.reason.isResponseTooLarge {
            return .failure(.faultyResponse(url: documentURL.description, detail: "its Metalink document is larger than \(limit) bytes"))
        } catch {
            return .failure(error)
        }
        let body = result.body ?? []
        guard result.hasMediaType("application/metalink4+xml") else {
            return .failure(.faultyResponse(url: documentURL.description, detail: "served as a Metalink document once (application/metalink4+xml), then as \(result.contentType ?? "no type")"))
        }
        do {
            _ = try Metalink(parsing: body)
        } catch {
            return .failure(.faultyResponse(url: documentURL.description, detail: "its Metalink document is refused: \(error)"))
        }
        result.path = ""
        result.isMetalink = true
        return .success(result)
    }
}

extension HaulError.Reason {
    var isResponseTooLarge: Bool {
        if case .responseTooLarge = self { return true }
        return false
    }
}
