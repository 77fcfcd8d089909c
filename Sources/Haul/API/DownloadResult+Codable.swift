import HaulHTTP

// Results compare and encode by value (a download log, a cache of what was fetched). Written out by hand,
// in this file rather than on the declaration; a stored property added to DownloadResult must be added to
// `==`, `CodingKeys`, `init(from:)` and `encode(to:)` (RequestAndResultCodableTests compares the encoded keys
// with the type's stored properties).

extension DownloadResult: Equatable {
    public static func == (lhs: DownloadResult, rhs: DownloadResult) -> Bool {
        lhs.path == rhs.path && lhs.bytes == rhs.bytes && lhs.duration == rhs.duration && lhs.finalURL == rhs.finalURL
            && lhs.entityTag == rhs.entityTag && lhs.lastModified == rhs.lastModified && lhs.redirects == rhs.redirects
            && lhs.connections == rhs.connections && lhs.bytesRequested == rhs.bytesRequested && lhs.retries == rhs.retries
            && lhs.body == rhs.body && lhs.status == rhs.status
            && lhs.headers.elementsEqual(rhs.headers) { $0.name == $1.name && $0.value == $1.value }
            && lhs.upToDate == rhs.upToDate && lhs.isMetalink == rhs.isMetalink
    }
}

/// Keyed by property name, every key required but the absent validators and ``body``, ``status`` and
/// ``headers`` (`[{"name": ..., "value": ...}]`; a result encoded without them decodes with none). ``finalURL`` is the
/// whole URL, user information included (see `HTTPURL`'s encoding); ``duration`` is stdlib `Duration`'s
/// encoding; ``lastModified`` whole seconds since 1970; ``body`` (a download kept in memory) one string of
/// standard Base64 with padding (RFC 4648 §4), as Foundation encodes `Data`.
extension DownloadResult: Codable {
    enum CodingKeys: String, CodingKey, CaseIterable {
        case path, bytes, duration, finalURL, entityTag, lastModified, redirects, connections, bytesRequested, retries, body, status, headers, upToDate, isMetalink
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(
            path: try container.decode(String.self, forKey: .path),
            bytes: try container.decode(Int64.self, forKey: .bytes),
            duration: try container.decode(Duration.self, forKey: .duration),
            finalURL: try container.decode(HTTPURL.self, forKey: .finalURL),
            entityTag: try container.decodeIfPresent(EntityTag.self, forKey: .entityTag),
            lastModified: try container.decodeIfPresent(HTTPDate.self, forKey: .lastModified),
            redirects: try container.decode(Int.self, forKey: .redirects),
            connections: try container.decode(Int.self, forKey: .connections),
            bytesRequested: try container.decode(Int64.self, forKey: .bytesRequested),
            retries: try container.decode(Int.self, forKey: .retries)
        )
        if let text = try container.decodeIfPresent(String.self, forKey: .body) {
            guard let body = Base64.decode(text) else {
                throw DecodingError.dataCorruptedError(forKey: .body, in: container, debugDescription: "a body is one string of Base64 with padding")
            }
            self.body = body
        }
        // Absent from results encoded before Haul reported the response: nil and none, as for a result that
        // needed no request.
        status = try container.decodeIfPresent(Int.self, forKey: .status)
        headers = (try container.decodeIfPresent([Header].self, forKey: .headers) ?? []).map { ($0.name, $0.value) }
        upToDate = try container.decodeIfPresent(Bool.self, forKey: .upToDate) ?? false
        isMetalink = try container.decodeIfPresent(Bool.self, forKey: .isMetalink) ?? false
    }

    /// A response header as `{"name": ..., "value": ...}`, as a request's are.
    private struct Header: Codable {
        var name: String
        var value: String
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encode(bytes, forKey: .bytes)
        try container.encode(duration, forKey: .duration)
        try container.encode(finalURL, forKey: .finalURL)
        try container.encodeIfPresent(entityTag, forKey: .entityTag)
        try container.encodeIfPresent(lastModified, forKey: .lastModified)
        try container.encode(redirects, forKey: .redirects)
        try container.encode(connections, forKey: .connections)
        try container.encode(bytesRequested, forKey: .bytesRequested)
        try container.encode(retries, forKey: .retries)
        try container.encodeIfPresent(body.map(Base64.encode), forKey: .body)
        try container.encodeIfPresent(status, forKey: .status)
        try container.encode(headers.map { Header(name: $0.name, value: $0.value) }, forKey: .headers)
        try container.encode(upToDate, forKey: .upToDate)
        try container.encode(isMetalink, forKey: .isMetalink)
    }
}
