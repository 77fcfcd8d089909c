import HaulHTTP

/// Whether a response is a Metalink v4 document to follow (aria2's `--follow-metalink`,
/// ``DownloadRequest/followsMetalink``) rather than a file to save. Asked of the probe's head, before
/// ``ProbeResponseDecision``; pure.
///
/// The rule: the request was a `GET` (a `HEAD` has no document to read), the answer is a `200`, or a `206`
/// from byte 0 (the probe asks with `Range`, and nginx answers that with `206`), and its `Content-Type` is
/// `application/metalink4+xml`, compared without case and without its parameters (`; charset=utf-8`) as
/// RFC 9110 §8.3.1 compares media types. A name ending in `.meta4` proves nothing: such a URL served as
/// anything else is a file like any other. Metalink 3 (`application/metalink+xml`) is not read. A type
/// that says Metalink on a body announced as larger than a document may be (``MetalinkLimits/maximumBytes``)
/// is a lie of one of the two: the body is not read into memory but saved as a file.
enum MetalinkResponseDecision: Equatable, Sendable {
    /// Save it as any response: it is no Metalink document (or following is off).
    case notMetalink
    /// Read it (at most `limit` bytes) and follow it.
    case follow
    /// The type says Metalink, but the file is `length` bytes, more than `limit`: saved as a file, with a notice.
    case tooLargeToFollow(length: Int64, limit: Int)

    /// The media type Metalink v4 documents are served as (RFC 5854 §4.1).
    static let mediaType = (type: "application", subtype: "metalink4+xml")

    /// Whether `mediaType` is ``mediaType`` (its parameters aside).
    private static func isMetalink(_ mediaType: MediaType?) -> Bool {
        guard let mediaType else { return false }
        return mediaType.type == Self.mediaType.type && mediaType.subtype == Self.mediaType.subtype
    }

    /// - Parameters:
    ///   - isHead: the request was `HEAD`.
    ///   - fileLength: the whole file's length as the answer shows it: a `200`'s `Content-Length`, a `206`'s
    ///     `Content-Range` complete length; nil when it shows none (chunked, close-delimited, `*`).
    ///   - rangeStart: the first byte a `206` carries (nil for a `200`).
    static func decide(isHead: Bool, status: Int, mediaType: MediaType?, fileLength: Int64?, rangeStart: Int64?,
                       limit: Int) -> MetalinkResponseDecision {
        guard !isHead, isMetalink(mediaType) else { return .notMetalink }
        switch status {
        case 200: break
        case 206 where rangeStart == 0: break
        default: return .notMetalink   // an error page, a redirect, a part from the middle: not the document
        }
        if let fileLength, fileLength > Int64(limit) { return .tooLargeToFollow(length: fileLength, limit: limit) }
        return .follow
    }

    /// The decision for a probe's answer (always a `GET`).
    static func decide(_ response: ResponseFacts, limit: Int) -> MetalinkResponseDecision {
        // Nearly every response is not one: known from its type alone, before its Content-Range is parsed.
        guard isMetalink(response.mediaType) else { return .notMetalink }
        let range = response.contentRange.flatMap(ContentRange.init)
        let length = response.status == 206 ? range?.completeLength : response.declaredLength
        return decide(isHead: false, status: response.status, mediaType: response.mediaType, fileLength: length,
                      rangeStart: range?.range?.lowerBound, limit: limit)
    }
}
