import HaulHTTP
import HaulIO
import SystemPackage

/// The server's validators for a finished file, kept with the file in extended attributes so that a later
/// run can ask "has it changed?" (`If-None-Match`, `If-Modified-Since`) with the server's own text: nginx,
/// for one, answers 304 only to its exact `Last-Modified` text. The names follow curl `--xattr` and wget2
/// (`user.xdg.origin.url` is theirs; these are Haul's own, under `user.haul.`).
///
/// Best effort throughout: a filesystem without extended attributes (or a full one) costs the next run its
/// conditional request, never this download.
struct StoredValidators: Sendable, Equatable {
    static let entityTagAttribute = "user.haul.etag"
    static let lastModifiedAttribute = "user.haul.last-modified"
    static let urlAttribute = "user.haul.url"

    /// The `ETag` field value exactly as the server sent it.
    var entityTag: String?
    /// The `Last-Modified` field value exactly as the server sent it.
    var lastModified: String?
    /// The URL the file came from (without credentials).
    var url: String?

    /// The validators of `finished`: the field text of the response it came from where there is one, else
    /// the parsed values written out again (a resumed download may have no full response in hand).
    init(of finished: SegmentedDownload.Finished) {
        let fields = finished.response?.fields
        entityTag = fields?.first("etag").map { latin1(Array($0)) } ?? finished.entityTag?.description
        lastModified = fields?.first("last-modified").map { latin1(Array($0)) } ?? finished.lastModified?.description
        url = finished.finalURL.description
    }

    init(entityTag: String?, lastModified: String?, url: String?) {
        self.entityTag = entityTag
        self.lastModified = lastModified
        self.url = url
    }

    /// Reads the attributes of the file at `path`; fields the file lacks are nil.
    static func read(path: String) -> StoredValidators {
        func text(_ name: String) -> String? {
            FileDescriptor.extendedAttribute(name, ofPath: path).map(latin1)
        }
        return StoredValidators(entityTag: text(entityTagAttribute), lastModified: text(lastModifiedAttribute),
                                url: text(urlAttribute))
    }

    /// Writes the attributes on `descriptor`; stops quietly at the first failure (no xattr support).
    func write(on descriptor: FileDescriptor) {
        for (name, value) in [(Self.entityTagAttribute, entityTag), (Self.lastModifiedAttribute, lastModified),
                              (Self.urlAttribute, url)] {
            guard let value else { continue }
            do { try descriptor.setExtendedAttribute(name, to: Array(value.utf8)) } catch { return }
        }
    }

    private static func latin1(_ bytes: [UInt8]) -> String {
        String(decoding: bytes.map { $0 < 0x80 ? $0 : UInt8(ascii: "?") }, as: UTF8.self)
    }
    private func latin1(_ bytes: [UInt8]) -> String { Self.latin1(bytes) }
}
