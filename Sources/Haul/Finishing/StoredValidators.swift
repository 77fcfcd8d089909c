import HaulHTTP
import HaulIO
import SystemPackage

/// The server's validators for a finished file, kept with the file in one extended attribute so that a later
/// run can ask "has it changed?" (`If-None-Match`, `If-Modified-Since`) with the server's own text: nginx,
/// for one, answers 304 only to its exact `Last-Modified` text.
///
/// One attribute, ``attribute`` (`user.haul.validators`), holds all three values: one `fsetxattr` per
/// finished file. Its value is text (``encoded()``), so `getfattr --only-values -n user.haul.validators FILE`
/// prints it plainly. It is written in a compact form when that fits in ``inodeBytes`` (a value that does not
/// fit in the inode costs ext4 a 4 KiB block of its own per file — for a 4 KiB download, twice its disk space
/// and the largest share of its finish), with the URL the file came from only when there is room for it too;
/// otherwise in the longer form, with the URL. (curl
/// `--xattr` and wget2 write `user.xdg.origin.url`; Haul does not, which would cost one more call per file.)
/// Files written by earlier versions carry three attributes instead (``entityTagAttribute``,
/// ``lastModifiedAttribute``, ``urlAttribute``); they are still read, so `-N` keeps working on them.
///
/// Anyone who can write a file can write its attributes, so whatever is read back is checked: a value that is
/// not plain ASCII text (a line break would end up in a request head) is not used.
///
/// Best effort throughout: a filesystem without extended attributes (or a full one) costs the next run its
/// conditional request, never this download.
struct StoredValidators: Sendable, Equatable {
    /// The one attribute Haul writes.
    static let attribute = "user.haul.validators"
    /// The attributes earlier versions wrote, one value each (three `fsetxattr` per file); read when
    /// ``attribute`` is absent, never written.
    static let entityTagAttribute = "user.haul.etag"
    static let lastModifiedAttribute = "user.haul.last-modified"
    static let urlAttribute = "user.haul.url"

    /// The largest encoded value written or read (4 KiB, what one ext4 block holds for all attributes of a
    /// file): a larger one is not written without its URL, and not read at all.
    static let maximumBytes = 4096

    /// The largest value ext4 keeps inside a file's inode under this attribute's name (256-byte inodes, the
    /// default: 96 bytes for in-inode attributes, less the headers and the name), measured on this project's
    /// machines: 56 bytes stay in the inode, 57 take a block.
    static let inodeBytes = 56

    /// The ``encoded()`` form's first line; a later format changes its number, and this version reads
    /// nothing from it.
    private static let header = "haul-validators/1"
    /// The compact form's first line (see ``compactEncoded()``).
    private static let compactHeader = "hv2"
    /// The compact form's last line.
    private static let compactTrailer = "."
    /// The ``encoded()`` form's last line: a value cut short anywhere lacks it.
    private static let trailer = "end"
    private static let entityTagKey = "etag:"
    private static let lastModifiedKey = "last-modified:"
    private static let urlKey = "url:"

    /// The `ETag` field value exactly as the server sent it.
    var entityTag: String?
    /// The `Last-Modified` field value exactly as the server sent it.
    var lastModified: String?
    /// The URL the file came from (without credentials).
    var url: String? {
        get { urlText ?? urlSource?.description }
        set { (urlText, urlSource) = (newValue, nil) }
    }

    /// The URL's text as given, or (``init(of:)``) nil and the URL it is made from when it is written: the
    /// compact form seldom has room for a URL (an entity tag and a date leave about 18 bytes), and a URL is
    /// not put together for nothing (a few thousand instructions, once per small file).
    private var urlText: String?
    private var urlSource: HTTPURL?
    /// The date the download parsed from `lastModified`, if it did: the compact form's `t` line asks whether
    /// the text is exactly this date's IMF-fixdate before parsing the text again.
    private var lastModifiedDate: HTTPDate?

    /// The validators of `finished`: the field text of the response it came from where there is one, else
    /// the parsed values written out again (a resumed download may have no full response in hand).
    init(of finished: SegmentedDownload.Finished) {
        let fields = finished.response?.fields
        entityTag = fields?.first("etag").map { Self.latin1($0) } ?? finished.entityTag?.description
        lastModified = fields?.first("last-modified").map { Self.latin1($0) } ?? finished.lastModified?.description
        lastModifiedDate = finished.lastModified
        urlSource = finished.finalURL
    }

    init(entityTag: String?, lastModified: String?, url: String?) {
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.urlText = url
    }

    /// The same three values (however the URL is held; the parsed date is no value of its own).
    static func == (lhs: StoredValidators, rhs: StoredValidators) -> Bool {
        lhs.entityTag == rhs.entityTag && lhs.lastModified == rhs.lastModified && lhs.url == rhs.url
    }

    /// Reads the validators of the file at `path`: ``attribute`` when it is there (nothing when it does not
    /// decode), else the three attributes of earlier versions. Fields the file lacks are nil.
    static func read(path: String) -> StoredValidators {
        if let value = FileDescriptor.extendedAttribute(attribute, ofPath: path, limit: maximumBytes) {
            return decoded(value) ?? StoredValidators(entityTag: nil, lastModified: nil, url: nil)
        }
        func legacy(_ name: String) -> String? {
            FileDescriptor.extendedAttribute(name, ofPath: path).flatMap { legacyValue($0) }
        }
        return StoredValidators(entityTag: legacy(entityTagAttribute), lastModified: legacy(lastModifiedAttribute),
                                url: legacy(urlAttribute))
    }

    /// Writes ``attribute`` on `descriptor` (one `fsetxattr`); a failure (no attribute support) is ignored.
    func write(on descriptor: FileDescriptor) {
        guard let value = encoded() else { return }
        try? descriptor.setExtendedAttribute(Self.attribute, to: value)
    }

    /// The value of ``attribute``: the compact form (``compactEncoded(withURL:)``) with the URL when it fits in
    /// ``inodeBytes``, else without it, else the longer form (``fullEncoded()``), lines of text, each ending in
    /// a line feed —
    ///
    ///     haul-validators/1
    ///     etag:"5f5e1000-493e0"
    ///     last-modified:Sun, 13 Sep 2020 12:26:40 GMT
    ///     url:http://a.test/f.bin
    ///     end
    ///
    /// A field that is nil, or whose text is not ``isStorable(_:)``, has no line; the fields that are there come in
    /// this order. Unambiguous because no value holds a line feed. When the whole would exceed ``maximumBytes``
    /// the URL is left out (the validators are what a later run needs); nil when even that is too large.
    func encoded() -> [UInt8]? {
        if let compact = compactEncoded() { return compact }
        return fullEncoded()
    }

    /// The compact form, when it fits in ``inodeBytes``: a ``compactHeader`` line, then one line each —
    ///
    ///     hv2
    ///     e"5f5e1000-493e0"
    ///     t1600000000
    ///     uhttp://a.test/f
    ///     .
    ///
    /// `e` the `ETag` text; `t` the `Last-Modified` as seconds since the epoch when its text is exactly that
    /// time's IMF-fixdate (what RFC 9110 has servers send: written back, it is the server's own text), else `m`
    /// and the text; `u` the URL; a `.` line last (a value cut short at a line's end lacks it). Fields in this
    /// order, each at most once, a nil or unstorable one left out. Nil when it does not fit (with `withURL`, the
    /// URL is in or the form is nil).
    func compactEncoded(withURL: Bool) -> [UInt8]? {
        var bytes = compactFields()
        if withURL {
            guard let url, Self.isStorable(url.utf8) else { return nil }
            Self.appendLine(UInt8(ascii: "u"), url, to: &bytes)
        }
        bytes += Self.compactTrailer.utf8
        bytes.append(UInt8(ascii: "\n"))
        return bytes.count <= Self.inodeBytes ? bytes : nil
    }

    /// `compactEncoded(withURL: true) ?? compactEncoded(withURL: false)`, with the lines before the URL's (and
    /// the date's check) made once.
    private func compactEncoded() -> [UInt8]? {
        var bytes = compactFields()
        let trailerBytes = Self.compactTrailer.utf8.count + 1
        // The URL's text is made only when at least its scheme, host and path fit.
        let urlMayFit = urlSource.map { source in
            let shortest = source.scheme.rawValue.utf8.count + 3 + source.host.uriText.utf8.count + source.path.utf8.count
            return bytes.count + shortest + 2 + trailerBytes <= Self.inodeBytes
        } ?? true
        if urlMayFit, let url, Self.isStorable(url.utf8), bytes.count + url.utf8.count + 2 + trailerBytes <= Self.inodeBytes {
            Self.appendLine(UInt8(ascii: "u"), url, to: &bytes)
        }
        guard bytes.count + trailerBytes <= Self.inodeBytes else { return nil }
        bytes += Self.compactTrailer.utf8
        bytes.append(UInt8(ascii: "\n"))
        return bytes
    }

    /// The compact form's header line, then its `e` and `t`/`m` lines.
    private func compactFields() -> [UInt8] {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(Self.inodeBytes + 8)
        bytes += Self.compactHeader.utf8
        bytes.append(UInt8(ascii: "\n"))
        if let entityTag, Self.isStorable(entityTag.utf8) { Self.appendLine(UInt8(ascii: "e"), entityTag, to: &bytes) }
        if let lastModified, Self.isStorable(lastModified.utf8) {
            if let seconds = Self.fixdateSeconds(lastModified, parsed: lastModifiedDate) {
                Self.appendLine(UInt8(ascii: "t"), String(seconds), to: &bytes)
            } else {
                Self.appendLine(UInt8(ascii: "m"), lastModified, to: &bytes)
            }
        }
        return bytes
    }

    /// The seconds of `text` when it is exactly the IMF-fixdate of the time it names (the server's own text
    /// comes back from them), else nil. Every IMF-fixdate ``HTTPDate`` writes of a date it parsed is 29 bytes
    /// (a four-digit year), so text of another length is not one, and is not parsed. Nor is text that is the
    /// IMF-fixdate of `parsed` (the date the download parsed from it): its seconds are `parsed`'s.
    private static func fixdateSeconds(_ text: String, parsed: HTTPDate? = nil) -> Int64? {
        guard text.utf8.count == 29 else { return nil }
        if let parsed, parsed.isIMFFixdate(text) { return parsed.secondsSinceEpoch }
        guard let date = HTTPDate(text), date.isIMFFixdate(text) else { return nil }
        return date.secondsSinceEpoch
    }

    private static func appendLine(_ key: UInt8, _ value: String, to bytes: inout [UInt8]) {
        bytes.append(key)
        bytes += value.utf8
        bytes.append(UInt8(ascii: "\n"))
    }

    /// The longer form, with the URL unless the whole would exceed ``maximumBytes``; nil when even that is too
    /// large.
    func fullEncoded() -> [UInt8]? {
        func encode(withURL: Bool) -> [UInt8] {
            var text = Self.header + "\n"
            for (key, value) in [(Self.entityTagKey, entityTag), (Self.lastModifiedKey, lastModified),
                                 (Self.urlKey, withURL ? url : nil)] {
                if let value, Self.isStorable(Array(value.utf8)) { text += key + value + "\n" }
            }
            text += Self.trailer + "\n"
            return Array(text.utf8)
        }
        let whole = encode(withURL: true)
        if whole.count <= Self.maximumBytes { return whole }
        let withoutURL = encode(withURL: false)
        return withoutURL.count <= Self.maximumBytes ? withoutURL : nil
    }

    /// The validators in `bytes`, a value of ``attribute``; nil unless it is exactly what ``encoded()``
    /// writes: the header and trailer lines, known keys in order and at most once, storable values, nothing
    /// after the trailer, at most ``maximumBytes``.
    static func decoded(_ bytes: [UInt8]) -> StoredValidators? {
        guard bytes.count <= maximumBytes, bytes.last == UInt8(ascii: "\n") else { return nil }
        let lines = bytes.dropLast().split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false)
        if lines.first!.elementsEqual(compactHeader.utf8) {
            guard lines.count >= 2, lines.last!.elementsEqual(compactTrailer.utf8) else { return nil }
            return compactDecoded(lines.dropFirst().dropLast())
        }
        guard lines.count >= 2, lines.first!.elementsEqual(header.utf8), lines.last!.elementsEqual(trailer.utf8) else {
            return nil
        }
        var stored = StoredValidators(entityTag: nil, lastModified: nil, url: nil)
        var nextKey = 0
        let keys = [entityTagKey, lastModifiedKey, urlKey]
        for line in lines.dropFirst().dropLast() {
            guard let found = keys.indices.dropFirst(nextKey).first(where: { line.starts(with: keys[$0].utf8) }) else { return nil }
            let value = Array(line.dropFirst(keys[found].utf8.count))
            guard isStorable(value) else { return nil }
            let text = String(decoding: value, as: UTF8.self)
            switch found {
            case 0: stored.entityTag = text
            case 1: stored.lastModified = text
            default: stored.url = text
            }
            nextKey = found + 1
        }
        return stored
    }

    /// The fields of the compact form's lines (after its header); nil unless they are exactly what
    /// ``compactEncoded(withURL:)`` writes: known keys in order and at most once, storable values, a `t` value
    /// of decimal digits (at most 12, no leading zero) that is a valid date.
    private static func compactDecoded(_ lines: ArraySlice<ArraySlice<UInt8>>) -> StoredValidators? {
        var stored = StoredValidators(entityTag: nil, lastModified: nil, url: nil)
        // e, then t or m, then u.
        var nextRank = 0
        for line in lines {
            guard let key = line.first else { return nil }
            let value = Array(line.dropFirst())
            guard isStorable(value) else { return nil }
            let rank: Int
            switch key {
            case UInt8(ascii: "e"): rank = 0
            case UInt8(ascii: "t"), UInt8(ascii: "m"): rank = 1
            case UInt8(ascii: "u"): rank = 2
            default: return nil
            }
            guard rank >= nextRank else { return nil }
            nextRank = rank + 1
            let text = String(decoding: value, as: UTF8.self)
            switch key {
            case UInt8(ascii: "e"): stored.entityTag = text
            case UInt8(ascii: "m"): stored.lastModified = text
            case UInt8(ascii: "t"):
                guard value.count <= 12, value.first != UInt8(ascii: "0") || value.count == 1,
                      value.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }),
                      let seconds = Int64(text) else { return nil }
                stored.lastModified = HTTPDate(secondsSinceEpoch: seconds).imfFixdate
            default: stored.url = text
            }
        }
        return stored
    }

    /// Whether `value` may be stored and sent back in a request field: printable ASCII, spaces and tabs, not
    /// empty. No control character (a line feed would end a request field early), nothing beyond ASCII.
    static func isStorable(_ value: some Collection<UInt8>) -> Bool {
        // In place when the bytes are contiguous (a native string's): walking a `String.UTF8View` through its
        // iterator cost a few hundred instructions per value.
        func storable(_ bytes: some Collection<UInt8>) -> Bool {
            !bytes.isEmpty && bytes.allSatisfy { (0x20...0x7E).contains($0) || $0 == UInt8(ascii: "\t") }
        }
        return value.withContiguousStorageIfAvailable { storable($0) } ?? storable(value)
    }

    /// A value of one of the attributes of earlier versions (``entityTagAttribute``...): as they read it (bytes
    /// beyond ASCII as `?`), nil when it holds a control character.
    static func legacyValue(_ bytes: [UInt8]) -> String? {
        let text = latin1(bytes)
        return isStorable(Array(text.utf8)) ? text : nil
    }

    /// `bytes` as ASCII text, every byte beyond ASCII replaced by `?`.
    private static func latin1(_ bytes: some Collection<UInt8>) -> String {
        if bytes.allSatisfy({ $0 < 0x80 }) { return String(decoding: bytes, as: UTF8.self) }
        return String(decoding: bytes.map { $0 < 0x80 ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
}
