import HaulHTTP

/// Whether the body of a `206` can be the bytes its `Content-Range` names (or a `200` the whole file's, when
/// a range is taken from it), judged from what its head says about the body itself — its media type and
/// content coding — before anything of it is written. Shared by the probe (``ProbeResponseDecision``) and
/// every ranged request (``RangedResponseDecision``). Pure.
///
/// Haul asks for one range per request and for no content coding, so the only body a `206` may carry is
/// those bytes as they are. The two ways a head can say otherwise while its `Content-Range` and
/// `Content-Length` agree with the request are judged here; any framing (length, chunked, close-delimited)
/// alike, since the head decides before the body is read.
enum PartialContentBody {
    /// Nothing in the head says the body is anything but the range's bytes.
    case bytes
    /// `Content-Type: multipart/byteranges` (RFC 9110 §14.6): the body is MIME parts between boundary lines,
    /// each with its own `Content-Range`. Treated as a faulty response and retried, not parsed: a server
    /// MUST NOT send one for a single range (§14.6), so it is one that botched this response, and a reader
    /// of its parts would be code that runs only for servers that are already wrong. Whatever its parameters
    /// (odd case, quoted or missing boundary).
    case multipart(HaulError)
    /// `Content-Encoding` other than `identity`: a range of a coded representation is a range of the coded
    /// bytes (RFC 9110 §14.1.1), and a server that codes each response on the fly (a request without
    /// `Accept-Encoding` lets it, §12.5.3) answers each range in a coding of its own: pieces that do not add
    /// up to the file, or to any one coded file. So ranges are never taken over a coding; the probe falls
    /// back to one plain `GET`, whose body is then the file as served, as curl and wget save it.
    case coded(HaulError)

    /// `asked`: the range requested, as `first-last` (or `first-`) for messages.
    static func judge(_ response: ResponseFacts, asked: @autoclosure () -> String, url: @autoclosure () -> String) -> PartialContentBody {
        if response.mediaType?.isMultipartByteranges == true {
            return .multipart(.faultyResponse(url: url(), detail: "Content-Type \"\(response.contentType ?? "")\" on the \(response.status) for bytes \(asked()): a multipart body wraps its parts in MIME boundaries, and a server must not send one for a single range (RFC 9110 §14.6)"))
        }
        if !response.contentCodings.isEmpty {
            return .coded(.faultyResponse(url: url(), detail: "Content-Encoding \"\(response.contentCodings.joined(separator: ", "))\" on the \(response.status) for bytes \(asked()): a range of a coded response is not the file's bytes (Haul asks for no coding)"))
        }
        return .bytes
    }

    /// Why the body is not the range's bytes; nil when nothing in the head says so.
    var fault: HaulError? {
        switch self {
        case .bytes: nil
        case .multipart(let error), .coded(let error): error
        }
    }
}
