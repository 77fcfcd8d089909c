import HaulHTTP

/// A Metalink v4 document (RFC 5854): the files it describes, each with its mirrors, size and hashes.
///
/// ``init(parsing:limits:)`` treats the document as hostile input: a strict XML reader without DTDs (so no
/// external or user-defined entities), bounded input, depth and counts, and file names that could write
/// outside the download directory are refused, not repaired. Elements in other namespaces (extensions) are
/// ignored; Metalink elements Haul does not use (descriptions, signatures, `metaurl`s) are skipped.
///
/// Build the downloads with ``DownloadRequest/init(metalink:directory:replacesExisting:ifChangedOnServer:discardsPartialDownload:)``.
public struct Metalink: Sendable, Hashable {
    /// The Metalink v4 namespace (RFC 5854, section 4).
    public static let namespace = "urn:ietf:params:xml:ns:metalink"
    /// The media type a server gives a Metalink v4 document.
    public static let mediaType = "application/metalink4+xml"

    /// The files, in document order; at least one, with distinct names.
    public var files: [MetalinkFile]

    /// Parses a Metalink v4 document (UTF-8 XML).
    public init(parsing bytes: [UInt8], limits: MetalinkLimits = MetalinkLimits()) throws(MetalinkError) {
        let root = try MetalinkXMLReader.parse(bytes, limits: limits)
        guard root.name == "metalink" else {
            throw MetalinkError(offset: root.offset, "the root element is <\(root.name)>, not <metalink>")
        }
        guard root.namespace == Self.namespace else {
            if root.namespace == "http://www.metalinker.org/" {
                throw MetalinkError(offset: root.offset, "this is a Metalink 3 document; only Metalink 4 (RFC 5854) is supported")
            }
            throw MetalinkError(offset: root.offset, "<metalink> is not in the Metalink 4 namespace \(Self.namespace)")
        }
        var files: [MetalinkFile] = []
        var names: Set<String> = []
        for child in root.children where child.namespace == Self.namespace {
            switch child.name {
            case "file":
                let file = try MetalinkFile(child, limits: limits)
                guard names.insert(file.name).inserted else {
                    throw MetalinkError(offset: child.offset, "file \"\(file.name)\" is described twice")
                }
                files.append(file)
                guard files.count <= limits.maximumFiles else {
                    throw MetalinkError(offset: child.offset, "more than \(limits.maximumFiles) files")
                }
            case "generator", "origin", "published", "updated":
                break
            default:
                throw MetalinkError(offset: child.offset, "<\(child.name)> is not a Metalink 4 element of <metalink>")
            }
        }
        guard !files.isEmpty else { throw MetalinkError(offset: root.offset, "the Metalink describes no file") }
        self.files = files
    }

    /// A document made of these files (for tests and for callers that build one themselves).
    public init(files: [MetalinkFile]) {
        self.files = files
    }
}

/// How much of a Metalink document ``Metalink/init(parsing:limits:)`` accepts.
public struct MetalinkLimits: Sendable, Hashable {
    /// The whole document, in bytes.
    public var maximumBytes = 4 << 20
    /// How deep elements nest (a Metalink needs 4).
    public var maximumDepth = 32
    /// Elements in the whole document.
    public var maximumElements = 200_000
    /// Attributes on one element.
    public var maximumAttributes = 32
    /// `<file>` elements.
    public var maximumFiles = 10_000
    /// `<url>` elements of one file.
    public var maximumURLsPerFile = 1_000

    public init() {}
}

/// Why a document is not a Metalink Haul accepts, and where (a byte offset into the document).
public struct MetalinkError: Error, Sendable, Hashable, CustomStringConvertible {
    /// Byte offset (from 0) of the construct that is wrong.
    public var offset: Int
    public var reason: String

    public init(offset: Int, _ reason: String) {
        self.offset = offset
        self.reason = reason
    }

    public var description: String { "Metalink byte \(offset): \(reason)" }
}

/// One file of a Metalink: where to get it and how to check it.
public struct MetalinkFile: Sendable, Hashable {
    /// A relative path, checked: no absolute path, no `..` or `.`, no empty, hidden or unsafe component (see
    /// ``checkedName(_:)``).
    public var name: String
    /// The size in bytes, when the document gives it.
    public var size: Int64?
    /// The URLs, most preferred first: by ascending `priority` (1 is the highest), those without a priority
    /// last, document order among equals. Only `http` and `https` URLs; others (`ftp`, …) are left out.
    public var urls: [MetalinkURL]
    /// Whole-file hashes, in document order.
    public var hashes: [MetalinkHash]
    /// Piece hashes (`<pieces>`), when given; the first `<pieces>` whose type Haul knows, else the first.
    public var pieces: MetalinkPieces?
    /// Byte offset of its `<file>` element in the document, for errors found after parsing (0 when the file
    /// was not parsed).
    public var documentOffset = 0

    public init(name: String, size: Int64? = nil, urls: [MetalinkURL], hashes: [MetalinkHash] = [], pieces: MetalinkPieces? = nil) {
        self.name = name
        self.size = size
        self.urls = urls
        self.hashes = hashes
        self.pieces = pieces
    }

    /// The strongest whole-file hash Haul can verify (sha-512, sha-256, sha-1, md5, in that order), as a
    /// ``Checksum``; nil when the file has none of these.
    public var strongestChecksum: Checksum? {
        let order: [DigestAlgorithm] = [.sha512, .sha256, .sha1, .md5]
        for algorithm in order {
            if let hash = hashes.first(where: { $0.algorithm == algorithm }) { return Checksum(algorithm: algorithm, hex: hash.hex) }
        }
        return nil
    }

    /// `name` if it is safe to create under a download directory, else nil: a relative path whose every
    /// `/`-separated component is what Haul would keep of a server-suggested name unchanged (no `\`, no
    /// control or bidi characters, no leading dot — so no `.` or `..` — no surrounding spaces, at most 236
    /// bytes, no working suffix like `.part`), and at most 1024 bytes in all.
    public static func checkedName(_ name: String) -> String? {
        guard !name.isEmpty, name.utf8.count <= 1024, !name.hasPrefix("/") else { return nil }
        for component in name.split(separator: "/", omittingEmptySubsequences: false) {
            guard !component.isEmpty, SuggestedFileName.sanitized(String(component)) == String(component) else { return nil }
        }
        return name
    }

    init(_ element: MetalinkXMLReader.Element, limits: MetalinkLimits) throws(MetalinkError) {
        guard let rawName = element.attribute("name") else { throw MetalinkError(offset: element.offset, "<file> has no name") }
        guard let name = Self.checkedName(rawName) else {
            throw MetalinkError(offset: element.offset, "file name \"\(TerminalSafe.text(rawName))\" is refused: it is absolute, climbs out of the directory (..), or has an unsafe component")
        }
        var size: Int64?
        var urls: [(url: MetalinkURL, order: Int)] = []
        var hashes: [MetalinkHash] = []
        var allPieces: [MetalinkPieces] = []
        for child in element.children where child.namespace == Metalink.namespace {
            switch child.name {
            case "size":
                guard size == nil else { throw MetalinkError(offset: child.offset, "<size> given twice") }
                size = try Self.number(child.text.trimmingXMLSpace(), what: "<size>", offset: child.offset)
            case "url":
                guard urls.count < limits.maximumURLsPerFile else {
                    throw MetalinkError(offset: child.offset, "more than \(limits.maximumURLsPerFile) URLs for one file")
                }
                if let url = try MetalinkURL(child) { urls.append((url, urls.count)) }
            case "hash":
                hashes.append(try MetalinkHash(child, type: child.attribute("type")))
            case "pieces":
                allPieces.append(try MetalinkPieces(child))
            case "copyright", "description", "identity", "language", "logo", "metaurl", "os", "publisher", "signature", "version":
                break
            default:
                throw MetalinkError(offset: child.offset, "<\(child.name)> is not a Metalink 4 element of <file>")
            }
        }
        if let size {
            for pieces in allPieces {
                let expected = size == 0 ? 0 : (size - 1) / pieces.length + 1
                guard Int64(pieces.hashes.count) == expected else {
                    throw MetalinkError(offset: element.offset, "file \"\(name)\": \(pieces.hashes.count) piece hashes of \(pieces.length) bytes do not cover its \(size) bytes (\(expected) pieces)")
                }
            }
        }
        self.name = name
        self.size = size
        // A stable sort: by priority, those without one last.
        self.urls = urls.sorted { a, b in
            let left = a.url.priority ?? Int.max, right = b.url.priority ?? Int.max
            return left != right ? left < right : a.order < b.order
        }.map(\.url)
        self.hashes = hashes
        self.pieces = allPieces.first { $0.algorithm != nil } ?? allPieces.first
        self.documentOffset = element.offset
    }

    /// A non-negative decimal integer (digits only) that fits in 63 bits.
    static func number(_ text: Substring, what: String, offset: Int) throws(MetalinkError) -> Int64 {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }),
              let value = Int64(text) else {
            throw MetalinkError(offset: offset, "\(what) \"\(TerminalSafe.text(String(text.prefix(40))))\" is not a non-negative integer")
        }
        return value
    }
}

/// A URL of a Metalink file, with its preference.
public struct MetalinkURL: Sendable, Hashable {
    /// An absolute `http` or `https` URL.
    public var url: String
    /// 1 (most preferred) to 999999, when given.
    public var priority: Int?
    /// Where the mirror is: an ISO 3166-1 alpha-2 country code (lowercased), when given.
    public var location: String?

    public init(url: String, priority: Int? = nil, location: String? = nil) {
        self.url = url
        self.priority = priority
        self.location = location
    }

    /// nil for a URL Haul cannot fetch (another scheme); an error for a malformed priority or location, or an
    /// http(s) URL that does not parse.
    init?(_ element: MetalinkXMLReader.Element) throws(MetalinkError) {
        let text = String(element.text.trimmingXMLSpace())
        if let priority = element.attribute("priority") {
            let value = try MetalinkFile.number(Substring(priority), what: "priority", offset: element.offset)
            guard value >= 1, value <= 999_999 else { throw MetalinkError(offset: element.offset, "priority \(value) is not between 1 and 999999") }
            self.priority = Int(value)
        }
        if let location = element.attribute("location") {
            guard location.utf8.count == 2, location.utf8.allSatisfy({ ($0 | 0x20) >= UInt8(ascii: "a") && ($0 | 0x20) <= UInt8(ascii: "z") }) else {
                throw MetalinkError(offset: element.offset, "location \"\(TerminalSafe.text(location))\" is not a two-letter country code")
            }
            self.location = location.lowercased()
        }
        let lowered = text.lowercased()
        guard lowered.hasPrefix("http://") || lowered.hasPrefix("https://") else {
            guard lowered.contains(":") else { throw MetalinkError(offset: element.offset, "<url> \"\(TerminalSafe.text(String(text.prefix(80))))\" is not an absolute URL") }
            return nil
        }
        do { _ = try HTTPURL(text) } catch {
            throw MetalinkError(offset: element.offset, "<url> \"\(TerminalSafe.text(String(text.prefix(80))))\" is not a usable URL: \(error)")
        }
        self.url = text
    }
}

/// A whole-file (or piece) hash: its IANA hash name (`sha-256`) and lowercase hex digest.
public struct MetalinkHash: Sendable, Hashable {
    /// The IANA "Hash Function Textual Names" name, lowercased (`sha-256`, `sha-1`, `md5`, …).
    public var type: String
    /// Lowercase hex.
    public var hex: String

    public init(type: String, hex: String) {
        self.type = type.lowercased()
        self.hex = hex.lowercased()
    }

    /// The digest function, when Haul has it.
    public var algorithm: DigestAlgorithm? { Self.algorithm(named: type) }

    static func algorithm(named type: String) -> DigestAlgorithm? {
        switch type.lowercased() {
        case "sha-256": .sha256
        case "sha-512": .sha512
        case "sha-1": .sha1
        case "md5": .md5
        default: nil
        }
    }

    /// Hex digits of the digest of each known type; other types only need to be hex.
    static let knownLengths = ["md5": 32, "sha-1": 40, "sha-224": 56, "sha-256": 64, "sha-384": 96, "sha-512": 128]

    init(_ element: MetalinkXMLReader.Element, type: String?) throws(MetalinkError) {
        guard let type, !type.isEmpty else { throw MetalinkError(offset: element.offset, "<hash> has no type") }
        let hex = element.text.trimmingXMLSpace()
        guard !hex.isEmpty, hex.utf8.count <= 1024, hex.allSatisfy(\.isHexDigit) else {
            throw MetalinkError(offset: element.offset, "the \(TerminalSafe.text(String(type.prefix(40)))) hash is not hex digits")
        }
        let lowered = type.lowercased()
        if let length = Self.knownLengths[lowered], hex.utf8.count != length {
            throw MetalinkError(offset: element.offset, "a \(lowered) hash has \(length) hex digits, not \(hex.utf8.count)")
        }
        self.init(type: lowered, hex: String(hex))
    }
}

/// Piece hashes (`<pieces length=… type=…>`): the hash of each `length`-byte piece of the file, in order
/// (the last piece may be shorter).
public struct MetalinkPieces: Sendable, Hashable {
    /// Bytes per piece, at least 1.
    public var length: Int64
    /// The hash type of every piece, as ``MetalinkHash/type``.
    public var type: String
    /// Lowercase hex, one per piece.
    public var hashes: [String]

    public init(length: Int64, type: String, hashes: [String]) {
        self.length = length
        self.type = type.lowercased()
        self.hashes = hashes
    }

    /// The digest function, when Haul has it.
    public var algorithm: DigestAlgorithm? { MetalinkHash.algorithm(named: type) }

    init(_ element: MetalinkXMLReader.Element) throws(MetalinkError) {
        guard let lengthText = element.attribute("length") else { throw MetalinkError(offset: element.offset, "<pieces> has no length") }
        let length = try MetalinkFile.number(Substring(lengthText), what: "<pieces> length", offset: element.offset)
        guard length >= 1 else { throw MetalinkError(offset: element.offset, "<pieces> length is 0") }
        guard let type = element.attribute("type"), !type.isEmpty else { throw MetalinkError(offset: element.offset, "<pieces> has no type") }
        var hashes: [String] = []
        for child in element.children where child.namespace == Metalink.namespace {
            guard child.name == "hash" else {
                throw MetalinkError(offset: child.offset, "<\(child.name)> inside <pieces>; only <hash> belongs there")
            }
            guard child.attribute("type") == nil || child.attribute("type")?.lowercased() == type.lowercased() else {
                throw MetalinkError(offset: child.offset, "a piece <hash> with a type other than its <pieces>'")
            }
            hashes.append(try MetalinkHash(child, type: type).hex)
        }
        guard !hashes.isEmpty else { throw MetalinkError(offset: element.offset, "<pieces> lists no hash") }
        self.init(length: length, type: type, hashes: hashes)
    }
}

extension String {
    fileprivate func trimmingXMLSpace() -> Substring {
        var result = Substring(self)
        while let first = result.utf8.first, first == 0x20 || first == 0x09 || first == 0x0A || first == 0x0D { result = result.dropFirst() }
        while let last = result.utf8.last, last == 0x20 || last == 0x09 || last == 0x0A || last == 0x0D { result = result.dropLast() }
        return result
    }
}

/// Text from the document, made safe to put in a message: control characters become `?`.
enum TerminalSafe {
    static func text(_ raw: String) -> String {
        String(String.UnicodeScalarView(raw.unicodeScalars.map { $0.value < 0x20 || (0x7F..<0xA0).contains($0.value) ? "?" : $0 }))
    }
}
