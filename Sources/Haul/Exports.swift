// `import Haul` brings Haul's own API and exactly the types of its lower modules that this API names (in
// its signatures, error payloads and settings), re-exported one by one. The rest of HaulHTTP and HaulIO
// (`HTTPClient`, `EventLoop`, `Connection`, `HTTPClientError`, `HTTPFields`, `SocketAddress`, ...) stays
// out: those names are SwiftNIO's, AsyncHTTPClient's and swift-http-types', and a server app that embeds
// Haul imports those too. Code inside this package that needs more imports HaulIO or HaulHTTP itself.
// Tests/EmbeddingPackage compiles Haul's API next to a module declaring the colliding names.

// URLs, validators and dates (DownloadResult, RedirectError, SuggestedFileName).
@_exported import struct HaulHTTP.HTTPURL
@_exported import struct HaulHTTP.HTTPHost
@_exported import struct HaulHTTP.HTTPOrigin
@_exported import struct HaulHTTP.EntityTag
@_exported import struct HaulHTTP.HTTPDate
// Proxies (DownloadOptions.proxy).
@_exported import struct HaulHTTP.ProxyURL
@_exported import struct HaulHTTP.NoProxyList
@_exported import struct HaulIO.ProxySettings
// Settings (DownloadOptions.timeouts, .tls; Checksum.algorithm).
@_exported import struct HaulIO.ConnectionTimeouts
@_exported import struct HaulIO.TLSSettings
@_exported import enum HaulIO.DigestAlgorithm
// Where connections go (DownloadOptions.network: curl's --resolve, --connect-to, -4/-6, --interface).
@_exported import struct HaulIO.NetworkSettings
@_exported import struct HaulIO.ResolveRule
@_exported import struct HaulIO.ConnectToRule
@_exported import enum HaulIO.NetworkInterface
@_exported import struct HaulIO.NetworkSettingError
// The payloads of HaulError's cases and what they carry.
@_exported import struct HaulHTTP.URLParseError
@_exported import struct HaulHTTP.RequestHeadError
@_exported import struct HaulHTTP.HTTPParseError
@_exported import struct HaulHTTP.ProxyConfigurationError
@_exported import struct HaulIO.ConnectionError
@_exported import struct HaulIO.SystemError
@_exported import struct HaulIO.TLSSetupError
@_exported import struct HaulIO.ProxyFailure
@_exported import struct HaulIO.ProxyRoute
@_exported import enum HaulIO.SOCKS5
// The logger HaulClient and its downloads take (apple/swift-log's; an app that imports Logging itself gets
// the same type, so nothing is ambiguous).
@_exported import struct Logging.Logger
// The resume journal's error (`HaulError.journal`, `DownloadProgress.checkpointFailure`), not the journal's
// codec (HaulJournal's public types are for the fuzzers), and the swift-system types the API carries.
@_exported import enum HaulJournal.JournalError
@_exported import struct SystemPackage.Errno
@_exported import struct SystemPackage.FileDescriptor
@_exported import struct SystemPackage.FilePath
