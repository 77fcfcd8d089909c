// The type names a server app gets from the packages it most likely uses next to Haul, declared here
// without their contents. Haul's own engine has types of many of these names (HaulIO, HaulHTTP); `import
// Haul` must not export them, or EmbeddingApp stops compiling ("ambiguous for type lookup").

// SwiftNIO (NIOCore, NIOPosix)
public protocol EventLoop: AnyObject, Sendable {}
public protocol EventLoopGroup: AnyObject, Sendable {}
public protocol Channel: AnyObject, Sendable {}
public struct ByteBuffer: Sendable { public init() {} }
public enum SocketAddress: Sendable { case unixDomainSocket(path: String) }
public struct IOError: Error { public init() {} }
public final class MultiThreadedEventLoopGroup: EventLoopGroup { public init() {} }
// NIOHTTP1
public struct HTTPHeaders: Sendable { public init() {} }
public enum HTTPMethod: Sendable { case GET }
public struct HTTPVersion: Sendable { public init() {} }
public struct HTTPRequestHead: Sendable { public init() {} }
public struct HTTPResponseHead: Sendable { public init() {} }
// NIOSSL
public struct TLSConfiguration: Sendable { public static func makeClientConfiguration() -> TLSConfiguration { TLSConfiguration() } }
// AsyncHTTPClient
public final class HTTPClient: Sendable { public init() {} }
public struct HTTPClientError: Error { public init() {} }
public struct HTTPClientRequest: Sendable { public init(url: String) {} }
public struct HTTPClientResponse: Sendable { public init() {} }
// swift-http-types
public struct HTTPFields: Sendable { public init() {} }
public struct HTTPField: Sendable { public init() {} }
public struct HTTPRequest: Sendable { public init() {} }
public struct HTTPResponse: Sendable { public init() {} }
// Generic names an app (or a database driver) declares too; Haul's engine has types of these names.
public final class Connection: Sendable { public init() {} }
public final class ConnectionPool: Sendable { public init() {} }
public struct RequestHead: Sendable { public init() {} }
public struct ResponseHead: Sendable { public init() {} }
public struct OutputFile: Sendable { public init() {} }
