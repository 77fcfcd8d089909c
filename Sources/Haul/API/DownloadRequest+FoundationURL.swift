#if canImport(FoundationEssentials)
// FoundationEssentials declares `URL`; like HaulError's `LocalizedError` conformance, this costs a program
// that links Foundation nothing, and a program without it does not get it.
import FoundationEssentials

extension DownloadRequest {
    /// A request for Foundation `URL`s, checked here: a URL that is not an absolute `http` or `https` URL
    /// with a host throws ``HaulError/Reason/invalidURL(_:)`` (with the URL) now, not when the download starts.
    public init(url: URL, mirrors: [URL] = [], destination: Destination, createsDirectories: Bool = false,
                replacesExisting: Bool = false, checksum: Checksum? = nil, ifChangedOnServer: ChangePolicy = .fail,
                discardsPartialDownload: Bool = false, headers: [(name: String, value: String)] = [],
                credentials: Credentials? = nil) throws(HaulError) {
        func parsed(_ url: URL) throws(HaulError) -> HTTPURL {
            do {
                return try HTTPURL(url.absoluteString)
            } catch {
                // The URL as the engine names a URL it could not parse: its user information shown as `***`.
                throw HaulError(.invalidURL(error), url: HTTPURL.displayText(of: url.absoluteString))
            }
        }
        var mirrorURLs: [HTTPURL] = []
        for mirror in mirrors { mirrorURLs.append(try parsed(mirror)) }
        self.init(url: try parsed(url), mirrors: mirrorURLs, destination: destination,
                  createsDirectories: createsDirectories, replacesExisting: replacesExisting, checksum: checksum,
                  ifChangedOnServer: ifChangedOnServer, discardsPartialDownload: discardsPartialDownload,
                  headers: headers, credentials: credentials)
    }
}
#endif
