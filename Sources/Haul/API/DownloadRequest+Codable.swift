// Requests compare and encode by value, so that an app can keep them, queue them, send them to another
// process and tell two apart. Written out by hand, in this file rather than on the declaration: `headers`
// is an array of tuples, which no synthesized conformance handles. A stored property added to
// DownloadRequest must be added to `==`, `CodingKeys`, `init(from:)` and `encode(to:)`; a test
// (RequestAndResultCodableTests) compares the encoded keys with the type's stored properties.

extension DownloadRequest: Equatable {
    public static func == (lhs: DownloadRequest, rhs: DownloadRequest) -> Bool {
        lhs.url == rhs.url && lhs.mirrors == rhs.mirrors && lhs.destination == rhs.destination
            && lhs.createsDirectories == rhs.createsDirectories && lhs.replacesExisting == rhs.replacesExisting
            && lhs.checksum == rhs.checksum && lhs.ifChangedOnServer == rhs.ifChangedOnServer
            && lhs.discardsPartialDownload == rhs.discardsPartialDownload
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
            && lhs.credentials == rhs.credentials
            && lhs.onlyIfChanged == rhs.onlyIfChanged && lhs.setsRemoteTime == rhs.setsRemoteTime
            && lhs.pieceHashes == rhs.pieceHashes
            && lhs.modifiedSince == rhs.modifiedSince && lhs.expectedSize == rhs.expectedSize
            && lhs.followsMetalink == rhs.followsMetalink
    }
}

/// Keyed by property name. Only `url` and `destination` are required when decoding; a missing key takes the
/// default of the initializer (the safe one: nothing replaced, nothing discarded, fail on change; no
/// headers, no credentials). ``DownloadRequest/Credentials`` are `{"user": ..., "password": ...}`, the
/// password in clear. A malformed checksum, URL-less request or unknown destination is a `DecodingError`, never a request that quietly does less.
///
/// A ``Destination/stream(_:)`` request cannot be encoded (encoding throws `EncodingError.invalidValue`): its
/// descriptor is a number that means something only in this process, and decoded elsewhere it would name
/// whatever file that process has open under it.
extension DownloadRequest: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case url, mirrors, destination, createsDirectories, replacesExisting, checksum, ifChangedOnServer, discardsPartialDownload, headers, credentials
        case onlyIfChanged, setsRemoteTime, pieceHashes
        case modifiedSince, expectedSize, followsMetalink
    }

    /// A request header as `{"name": ..., "value": ...}`.
    private struct Header: Codable {
        var name: String
        var value: String
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            url: try container.decode(String.self, forKey: .url),
            mirrors: try container.decodeIfPresent([String].self, forKey: .mirrors) ?? [],
            destination: try container.decode(Destination.self, forKey: .destination),
            createsDirectories: try container.decodeIfPresent(Bool.self, forKey: .createsDirectories) ?? false,
            replacesExisting: try container.decodeIfPresent(Bool.self, forKey: .replacesExisting) ?? false,
            checksum: try container.decodeIfPresent(Checksum.self, forKey: .checksum),
            ifChangedOnServer: try container.decodeIfPresent(ChangePolicy.self, forKey: .ifChangedOnServer) ?? .fail,
            discardsPartialDownload: try container.decodeIfPresent(Bool.self, forKey: .discardsPartialDownload) ?? false
        )
        headers = (try container.decodeIfPresent([Header].self, forKey: .headers) ?? []).map { ($0.name, $0.value) }
        credentials = try container.decodeIfPresent(Credentials.self, forKey: .credentials)
        onlyIfChanged = try container.decodeIfPresent(Bool.self, forKey: .onlyIfChanged) ?? false
        setsRemoteTime = try container.decodeIfPresent(Bool.self, forKey: .setsRemoteTime) ?? false
        pieceHashes = try container.decodeIfPresent(PieceHashes.self, forKey: .pieceHashes)
        if let text = try container.decodeIfPresent(String.self, forKey: .modifiedSince) {
            guard let date = HTTPDate(text) else {
                throw DecodingError.dataCorruptedError(forKey: .modifiedSince, in: container, debugDescription: "not an HTTP date: \(text)")
            }
            modifiedSince = date
        }
        expectedSize = try container.decodeIfPresent(Int64.self, forKey: .expectedSize)
        if let expectedSize, expectedSize < 0 {
            throw DecodingError.dataCorruptedError(forKey: .expectedSize, in: container, debugDescription: "a size is never negative, not \(expectedSize)")
        }
        followsMetalink = try container.decodeIfPresent(Bool.self, forKey: .followsMetalink) ?? false
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(url, forKey: .url)
        try container.encode(mirrors, forKey: .mirrors)
        try container.encode(destination, forKey: .destination)
        try container.encode(createsDirectories, forKey: .createsDirectories)
        try container.encode(replacesExisting, forKey: .replacesExisting)
        try container.encodeIfPresent(checksum, forKey: .checksum)
        try container.encode(ifChangedOnServer, forKey: .ifChangedOnServer)
        try container.encode(discardsPartialDownload, forKey: .discardsPartialDownload)
        try container.encode(headers.map { Header(name: $0.name, value: $0.value) }, forKey: .headers)
        try container.encodeIfPresent(credentials, forKey: .credentials)
        // Only when set: a request that does not use them encodes as before (session records, older daemons).
        if onlyIfChanged { try container.encode(onlyIfChanged, forKey: .onlyIfChanged) }
        if setsRemoteTime { try container.encode(setsRemoteTime, forKey: .setsRemoteTime) }
        try container.encodeIfPresent(pieceHashes, forKey: .pieceHashes)
        try container.encodeIfPresent(modifiedSince?.imfFixdate, forKey: .modifiedSince)
        try container.encodeIfPresent(expectedSize, forKey: .expectedSize)
        if followsMetalink { try container.encode(followsMetalink, forKey: .followsMetalink) }
    }
}

/// One key naming the case, its path (or limit) as the value: `{"file": "out/big.iso"}`,
/// `{"directory": "downloads"}`, `{"memory": 1048576}`.
extension DownloadRequest.Destination: Codable {
    enum CodingKeys: String, CodingKey {
        case file, directory, stream, memory
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        guard container.allKeys.count == 1, let key = container.allKeys.first else {
            throw DecodingError.dataCorrupted(DecodingError.Context(
                codingPath: container.codingPath, debugDescription: "a destination is one of file, directory, memory"))
        }
        switch key {
        case .file: self = .file(try container.decode(String.self, forKey: .file))
        case .directory: self = .directory(try container.decode(String.self, forKey: .directory))
        case .memory:
            let limit = try container.decode(Int.self, forKey: .memory)
            guard limit >= 0 else {
                throw DecodingError.dataCorruptedError(forKey: .memory, in: container, debugDescription: "a memory limit is a number of bytes, never negative")
            }
            self = .memory(limit: limit)
        case .stream:
            throw DecodingError.dataCorruptedError(forKey: .stream, in: container,
                                                   debugDescription: "a stream destination (an open descriptor) cannot be decoded")
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        switch self {
        case .file(let path): try container.encode(path, forKey: .file)
        case .directory(let path): try container.encode(path, forKey: .directory)
        case .memory(let limit): try container.encode(limit, forKey: .memory)
        case .stream:
            throw EncodingError.invalidValue(self, EncodingError.Context(
                codingPath: encoder.codingPath,
                debugDescription: "a stream destination is a descriptor of this process; it means nothing once encoded"))
        }
    }
}

/// `"sha256=9f86d0..."`, as ``Checksum/description`` writes it and ``Checksum/init(_:)`` parses it: a digest of
/// the wrong length or an unknown algorithm is a `DecodingError`.
extension Checksum: Codable {
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let text = try container.decode(String.self)
        do {
            self = try Checksum(text)
        } catch {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: error.description)
        }
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(description)
    }
}

/// `"fail"` or `"restart"`.
extension ChangePolicy: Codable {}
