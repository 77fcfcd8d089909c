extension MisbehavingServer {
    /// The representation the server serves: bytes in memory with validators.
    public struct Resource: Sendable, Hashable {
        /// The complete content.
        public var bytes: [UInt8]
        /// The `ETag` field value including quotes (e.g. `"v1"`), or `nil` to send none.
        public var etag: String?
        /// The `Last-Modified` field value (an IMF-fixdate), or `nil` to send none.
        public var lastModified: String?
        /// The `Content-Type` field value.
        public var contentType: String

        /// Creates a resource from explicit content and validators.
        public init(
            bytes: [UInt8], etag: String? = "\"haul-v1\"", lastModified: String? = "Wed, 21 Oct 2015 07:28:00 GMT",
            contentType: String = "application/octet-stream"
        ) {
            self.bytes = bytes
            self.etag = etag
            self.lastModified = lastModified
            self.contentType = contentType
        }

        /// Another version of this resource, as a file replaced on the server would be: the same length, every
        /// byte different, an ETag of the same strength with another value, and another `Last-Modified`
        /// (a validator this resource lacks stays absent, so only the ones it has can tell the versions apart).
        public var otherVersion: Resource {
            var other = self
            other.bytes = bytes.map { $0 ^ 0xA5 }
            if let etag {
                // `"x"` becomes `"x-other"`, `W/"x"` becomes `W/"x-other"`.
                other.etag = etag.hasSuffix("\"") ? String(etag.dropLast()) + "-other\"" : etag + "-other"
            }
            if let lastModified {
                let later = "Thu, 22 Oct 2015 08:28:00 GMT"
                other.lastModified = lastModified == later ? "Fri, 23 Oct 2015 09:28:00 GMT" : later
            }
            return other
        }

        /// `size` bytes of the ``TestFiles`` pattern for `seed`, with an ETag naming size and seed.
        public static func pattern(size: Int, seed: UInt64 = 0) -> Resource {
            Resource(bytes: TestFiles.bytes(count: size, seed: seed), etag: "\"haul-\(size)-\(seed)\"")
        }
    }

    /// How long a stall lasts. Every stall ends early when the server stops.
    public enum Stall: Sendable, Hashable {
        /// Send nothing for this many seconds, then carry on.
        case seconds(Double)
        /// Send nothing until ``MisbehavingServer/stop()``.
        case untilStopped
    }

    /// What a response does with the request's `Range` field.
    public enum RangeHandling: Sendable, Hashable {
        /// Correct HTTP: 206 with `Content-Range`, 416 if unsatisfiable, 200 if `If-Range` does not match.
        case honor
        /// Answer 200 with the whole body, as servers without range support do.
        case ignore
        /// Send the requested bytes but a `Content-Range` whose offsets are moved by this many bytes.
        case shiftContentRange(by: Int)
        /// Send 206 with the requested bytes but no `Content-Range` field.
        case omitContentRange
        /// Answer a bounded range (`bytes=first-last`) whose last byte lies past the resource's end with this
        /// status and a short text body (a `416` with `Content-Range: bytes */length`), and every other range
        /// correctly: webfs answers `400` to `bytes=0-4194303` whenever the file is shorter than 4 MiB.
        case refuseBoundedPastEnd(status: Int)
        /// Answer every request that carries `Range` (whatever its value) with this status and a short text
        /// body (a `416` with `Content-Range: bytes */length`); requests without `Range` are served.
        case refuseEveryRange(status: Int)
    }

    /// A response that is not the resource at all.
    public enum Substitute: Sendable, Hashable {
        /// This status (e.g. 503, 429) with a short text body and optionally `Retry-After`.
        case status(Int, retryAfter: String?)
        /// A redirect with `Location` set to `location` (a path or URL, sent verbatim).
        case redirect(status: Int, location: String)
        /// These bytes instead of a response head, then the connection is closed.
        case garbage([UInt8])
        /// A 200 head carrying about `fieldBytes` bytes of filler header fields, and an empty body.
        case oversizedHead(fieldBytes: Int)
        /// Close the connection without sending anything.
        case closeWithoutResponse
        /// These exact bytes (a hand-made response: duplicated fields, odd framing, a second response after
        /// the first), written piece by piece, each after its pause; then the connection ends as `ending`
        /// says (``Ending/keepAlive``: the next request is read from it, whatever the bytes said).
        case raw([RawPiece], ending: Ending)
    }

    /// Bytes of a ``Substitute/raw(_:ending:)`` answer, sent after a pause.
    public struct RawPiece: Sendable, Hashable {
        /// Milliseconds to wait before sending ``bytes``.
        public var pauseMilliseconds: Int
        public var bytes: [UInt8]

        public init(_ bytes: [UInt8], afterMilliseconds pauseMilliseconds: Int = 0) {
            self.bytes = bytes
            self.pauseMilliseconds = pauseMilliseconds
        }
    }

    /// How a body is framed.
    public enum Framing: Sendable, Hashable {
        /// `Content-Length`.
        case contentLength
        /// `Transfer-Encoding: chunked`, one chunk per write.
        case chunked
        /// Neither `Content-Length` nor `Transfer-Encoding`: the body ends when the server closes the
        /// connection (RFC 9112 §6.3 rule 8). Sends `Connection: close`; over TLS with close_notify unless the
        /// ending is ``Ending/closeWithoutCloseNotify``.
        case closeDelimited
    }

    /// What a ranged request of an empty resource (which no byte range can satisfy) gets.
    public enum EmptyRangeAnswer: Sendable, Hashable {
        /// `416 Range Not Satisfiable` with `Content-Range: bytes */0` and a short text body, as caddy, h2o
        /// and nginx answer (the correct answer, RFC 9110 §15.5.17).
        case unsatisfiable
        /// `206 Partial Content` with `Content-Range: bytes 0--1/0` and `Content-Length: 0`, as webfs answers.
        case partialContentMinusOne
    }

    /// A `206` framed as `multipart/byteranges` (RFC 9110 §14.6) although one range was asked for, which a
    /// server must not do: the body is the range as one MIME part (`\r\n--boundary\r\n`, the part's
    /// `Content-Type` and `Content-Range`, a blank line, the bytes, `\r\n--boundary--\r\n`) *cut to the range's
    /// length*, under a top-level `Content-Range` for the range: every length and range in the head agrees
    /// with the request, and only `Content-Type` tells the framing from the bytes. With any ``Framing``.
    public struct MultipartByteranges: Sendable, Hashable {
        /// The `Content-Type` value sent, verbatim (odd case, quoted boundary, no boundary, more parameters).
        public var contentType: String
        /// The boundary written around the part.
        public var boundary: String

        public init(contentType: String, boundary: String) {
            self.contentType = contentType
            self.boundary = boundary
        }
    }

    /// Interim `100 Continue` responses sent before the final response.
    public struct Interims: Sendable, Hashable {
        /// Pause after each interim response, in milliseconds.
        public var intervalMilliseconds: Int
        /// How many to send before the final response; `nil` for no end (until the client goes or the
        /// server stops: no final response is ever sent).
        public var count: Int?
    }

    /// What happens to the connection after a complete response.
    public enum Ending: Sendable, Hashable {
        /// Keep it open for the next request (unless the client sent `Connection: close`).
        case keepAlive
        /// Send `Connection: close` and close it cleanly (with TLS close_notify).
        case close
        /// Close the socket without TLS close_notify (for plain HTTP the same as `close`, minus the field).
        case closeWithoutCloseNotify
    }

    /// Body sent in small pieces with a pause between them.
    public struct Drip: Sendable, Hashable {
        /// Bytes per piece.
        public var bytes: Int
        /// Pause after each piece, in milliseconds.
        public var intervalMilliseconds: Int
        /// Drip only the first this many body bytes, then send the rest at full speed (nil: the whole body),
        /// so that a trickle ends by itself for a client that waits it out.
        public var forBytes: Int? = nil
    }

    /// A pause after some body bytes.
    public struct MidBodyStall: Sendable, Hashable {
        /// Body bytes sent before the pause.
        public var afterBytes: Int
        /// How long the pause lasts.
        public var stall: Stall
    }

    /// Everything a script can make one response do; the default is a correct response.
    ///
    /// Use the static factories (`.closeMidBody(afterBytes: 1000)`, `.status(503, retryAfter: "1")`, ...) and
    /// combine them with ``with(_:)`` when one fault is not enough.
    public struct Behavior: Sendable, Hashable {
        /// Wait this long after reading the request before sending anything.
        public var stallBeforeHead: Stall?
        /// Serve this instead of the server's resource (a changed ETag and content, for example).
        public var resource: Resource?
        /// What to do with `Range`.
        public var rangeHandling: RangeHandling = .honor
        /// Send this instead of the resource.
        public var substitute: Substitute?
        /// How the body is framed.
        public var framing: Framing = .contentLength
        /// Send the body slowly.
        public var drip: Drip?
        /// Pause once in the middle of the body.
        public var midBodyStall: MidBodyStall?
        /// Close the connection abruptly (no TLS close_notify, no last chunk) after this many body bytes.
        public var closeAfterBodyBytes: Int?
        /// What happens after a complete response.
        public var ending: Ending = .keepAlive
        /// Send this many body bytes past the selected range (the resource's following bytes, then filler
        /// past its end), framed by ``framing``: `Content-Length` counts them, chunked framing carries them, a
        /// close-delimited body ends after them. The head (`Content-Range` included) stays correct.
        public var overrunBytes: Int?
        /// Send interim `100 Continue` responses before the final one (or forever).
        public var interims: Interims?
        /// Send the response head in small pieces with a pause between them (the body then goes normally).
        public var headDrip: Drip?
        /// The answer to a ranged request of an empty resource (with ``RangeHandling/honor``).
        public var emptyRangeAnswer: EmptyRangeAnswer = .unsatisfiable
        /// A `Content-Disposition` field value for resource responses (200, 206, HEAD), e.g.
        /// `attachment; filename="x.tar.gz"`.
        public var contentDisposition: String?
        /// Serve the requested range (`206`) even when `If-Range` names another version, as servers that do
        /// not implement `If-Range` do (RFC 9110 §13.1.5 makes them answer `200`): a client that trusts
        /// `If-Range` alone then gets bytes of a changed resource.
        public var ignoresIfRange = false
        /// Serve ``Resource/otherVersion`` of the server's resource (every byte and every validator changed,
        /// a weak ETag kept weak) for this response: a file replaced on the server between two requests.
        public var servesOtherVersion = false
        /// Frame a `206` as `multipart/byteranges` (a `200` is sent as usual).
        public var multipartByteranges: MultipartByteranges?
        /// A `Content-Encoding` field value for resource responses (200, 206), with a body of the length the
        /// head promises that is not the resource's bytes (each XORed with 0x5A): what a server that codes each
        /// response on the fly sends, at a length that hides it.
        public var contentEncoding: String?
        /// The chaos fault this behavior stands for, recorded in ``MisbehavingServer/Exchange/chaosFault``
        /// (``Script/chaos(seed:faultRate:faults:)`` sets it; it changes nothing on the wire).
        public var chaosFault: ChaosFault?
        /// More fields for resource responses (200, 206), sent verbatim after the others (a `Repr-Digest`, say).
        public var extraFields: [HeaderField] = []

        /// A correct response.
        public init() {}

        /// A copy changed by `update`, for combining faults: `.drip(...).with { $0.rangeHandling = .ignore }`.
        public func with(_ update: (inout Behavior) -> Void) -> Behavior {
            var copy = self
            update(&copy)
            return copy
        }

        /// A correct response.
        public static let normal = Behavior()

        /// Close the connection after `afterBytes` body bytes (over TLS without close_notify).
        public static func closeMidBody(afterBytes: Int) -> Behavior { Behavior().with { $0.closeAfterBodyBytes = afterBytes } }

        /// Send nothing for a while after the request.
        public static func stallBeforeHead(_ stall: Stall) -> Behavior { Behavior().with { $0.stallBeforeHead = stall } }

        /// Send the head and `afterBytes` body bytes, then nothing for a while, then the rest.
        public static func stallMidBody(afterBytes: Int, _ stall: Stall) -> Behavior {
            Behavior().with { $0.midBodyStall = MidBodyStall(afterBytes: afterBytes, stall: stall) }
        }

        /// Send the body `bytes` at a time with `everyMilliseconds` between pieces.
        public static func drip(bytes: Int, everyMilliseconds: Int) -> Behavior {
            Behavior().with { $0.drip = Drip(bytes: bytes, intervalMilliseconds: everyMilliseconds) }
        }

        /// Send the requested bytes under a `Content-Range` shifted by `offset` bytes.
        public static func wrongContentRange(shiftedBy offset: Int) -> Behavior {
            Behavior().with { $0.rangeHandling = .shiftContentRange(by: offset) }
        }

        /// Send 206 without `Content-Range`.
        public static let omitContentRange = Behavior().with { $0.rangeHandling = .omitContentRange }

        /// Answer 200 with the whole body whatever the `Range`.
        public static let ignoreRange = Behavior().with { $0.rangeHandling = .ignore }

        /// Serve a different resource (content and validators) correctly.
        public static func serve(_ resource: Resource) -> Behavior { Behavior().with { $0.resource = resource } }

        /// Serve another version of the server's resource (``servesOtherVersion``), honouring `If-Range` as a
        /// correct server does (a mismatch gets the whole other version, `200`).
        public static let otherVersion = Behavior().with { $0.servesOtherVersion = true }

        /// Send the first `forBytes` body bytes `bytes` at a time with `everyMilliseconds` between pieces, then
        /// the rest at full speed: a trickle that ends by itself.
        public static func trickle(bytes: Int, everyMilliseconds: Int, forBytes: Int) -> Behavior {
            Behavior().with { $0.drip = Drip(bytes: bytes, intervalMilliseconds: everyMilliseconds, forBytes: forBytes) }
        }

        /// Answer ranges with `206` whatever `If-Range` says (``ignoresIfRange``).
        public static let ignoreIfRange = Behavior().with { $0.ignoresIfRange = true }

        /// Answer with `status` (e.g. 503 or 429), optionally with `Retry-After: retryAfter`.
        public static func status(_ status: Int, retryAfter: String? = nil) -> Behavior {
            Behavior().with { $0.substitute = .status(status, retryAfter: retryAfter) }
        }

        /// Redirect to `location`.
        public static func redirect(to location: String, status: Int = 302) -> Behavior {
            Behavior().with { $0.substitute = .redirect(status: status, location: location) }
        }

        /// A correct chunked response.
        public static let chunked = Behavior().with { $0.framing = .chunked }

        /// Chunked framing cut off after `afterBytes` body bytes, before the last chunk, by closing the connection.
        public static func truncatedChunked(afterBytes: Int) -> Behavior {
            Behavior().with {
                $0.framing = .chunked
                $0.closeAfterBodyBytes = afterBytes
            }
        }

        /// A head with about `fieldBytes` bytes of header fields (default 100 KiB).
        public static func oversizedHead(fieldBytes: Int = 100 * 1024) -> Behavior {
            Behavior().with { $0.substitute = .oversizedHead(fieldBytes: fieldBytes) }
        }

        /// Bytes that are not an HTTP response, then close.
        public static let garbageHead = Behavior().with {
            $0.substitute = .garbage(Array("SSH-2.0-OpenSSH_9.2\r\nthis is not HTTP\r\n\r\n".utf8))
        }

        /// These exact bytes instead of a response, then `ending` (see ``Substitute/raw(_:ending:)``).
        public static func raw(_ bytes: [UInt8], ending: Ending = .keepAlive) -> Behavior {
            Behavior().with { $0.substitute = .raw([RawPiece(bytes)], ending: ending) }
        }

        /// These pieces, each after its pause, instead of a response, then `ending`.
        public static func raw(pieces: [RawPiece], ending: Ending = .keepAlive) -> Behavior {
            Behavior().with { $0.substitute = .raw(pieces, ending: ending) }
        }

        /// Close without sending anything.
        public static let closeWithoutResponse = Behavior().with { $0.substitute = .closeWithoutResponse }

        /// A complete response, then close the socket without TLS close_notify.
        public static let closeWithoutCloseNotify = Behavior().with { $0.ending = .closeWithoutCloseNotify }

        /// A complete response with `Connection: close`, then a clean close.
        public static let closeAfterResponse = Behavior().with { $0.ending = .close }

        /// A correct response whose body is delimited by closing the connection (no `Content-Length`).
        public static let closeDelimited = Behavior().with { $0.framing = .closeDelimited }

        /// A correct head (status, `Content-Range`) whose body runs `extra` bytes past the range, framed as
        /// `framing` says: `.contentLength` announces range + `extra`, `.chunked` carries range + `extra`,
        /// `.closeDelimited` sends range + `extra` and closes.
        public static func bodyOverrun(extra: Int, framing: Framing = .contentLength) -> Behavior {
            Behavior().with {
                $0.overrunBytes = extra
                $0.framing = framing
            }
        }

        /// `100 Continue` every `everyMilliseconds`, `count` times then the real response, or forever (`nil`).
        public static func interimFlood(everyMilliseconds: Int, count: Int? = nil) -> Behavior {
            Behavior().with { $0.interims = Interims(intervalMilliseconds: everyMilliseconds, count: count) }
        }

        /// The response head `bytes` at a time with `everyMilliseconds` between pieces, then the body normally.
        public static func dripHead(bytes: Int = 1, everyMilliseconds: Int) -> Behavior {
            Behavior().with { $0.headDrip = Drip(bytes: bytes, intervalMilliseconds: everyMilliseconds) }
        }

        /// A ranged request of an empty resource gets webfs's `206` with `Content-Range: bytes 0--1/0`.
        public static let webfsEmptyRange = Behavior().with { $0.emptyRangeAnswer = .partialContentMinusOne }

        /// A `206` framed as `multipart/byteranges` with `boundary`, under `contentType` (default
        /// `multipart/byteranges; boundary=<boundary>`); see ``MultipartByteranges``.
        public static func multipartByteranges(boundary: String = "HAUL_SEPARATES_PARTS", contentType: String? = nil) -> Behavior {
            Behavior().with {
                $0.multipartByteranges = MultipartByteranges(contentType: contentType ?? "multipart/byteranges; boundary=\(boundary)",
                                                             boundary: boundary)
            }
        }

        /// `Content-Encoding: <coding>` on a body that is not the resource's bytes; see ``contentEncoding``.
        public static func contentEncoded(_ coding: String = "gzip") -> Behavior { Behavior().with { $0.contentEncoding = coding } }

        /// A bounded range past the resource's end gets `status` (webfs: `400`); see ``RangeHandling/refuseBoundedPastEnd(status:)``.
        public static func refuseBoundedRangePastEnd(status: Int = 400) -> Behavior {
            Behavior().with { $0.rangeHandling = .refuseBoundedPastEnd(status: status) }
        }

        /// Every request with `Range` gets `status`; see ``RangeHandling/refuseEveryRange(status:)``.
        public static func refuseEveryRange(status: Int = 400) -> Behavior {
            Behavior().with { $0.rangeHandling = .refuseEveryRange(status: status) }
        }

        /// A correct response carrying the field `name: value` (verbatim); see ``extraFields``.
        public static func field(_ name: String, _ value: String) -> Behavior {
            Behavior().with { $0.extraFields.append(HeaderField(name: name, value: value)) }
        }

        /// A correct response carrying `Content-Disposition: attachment; filename="<filename>"` (sent verbatim).
        public static func attachment(filename: String) -> Behavior {
            Behavior().with { $0.contentDisposition = "attachment; filename=\"\(filename)\"" }
        }
    }

    /// Decides, per request, how the server misbehaves.
    public struct Script: Sendable {
        /// Called on the connection's thread for every request, in order per connection.
        public let decide: @Sendable (ReceivedRequest) -> Behavior

        /// A script from a closure that sees the parsed request (method, target, headers, range, indices).
        public init(_ decide: @escaping @Sendable (ReceivedRequest) -> Behavior) {
            self.decide = decide
        }

        /// Always correct.
        public static let normal = Script { _ in .normal }

        /// The same behavior for every request.
        public static func always(_ behavior: Behavior) -> Script { Script { _ in behavior } }

        /// `behaviors[i]` for request `i` (counted over the whole server), `then` for all later requests.
        public static func sequence(_ behaviors: [Behavior], then: Behavior = .normal) -> Script {
            Script { request in request.index < behaviors.count ? behaviors[request.index] : then }
        }

        /// Behaviors for chosen request indices, `otherwise` for the rest.
        public static func byRequestIndex(_ behaviors: [Int: Behavior], otherwise: Behavior = .normal) -> Script {
            Script { request in behaviors[request.index] ?? otherwise }
        }

        /// Correct until request `index`, then `resource` (a new ETag and content) from that request on.
        public static func changeResource(to resource: Resource, fromRequest index: Int) -> Script {
            Script { request in request.index >= index ? .serve(resource) : .normal }
        }

        /// Redirects by exact target, e.g. `["/a": "/b", "/b": "/a"]` for a loop; other targets are served.
        public static func redirects(_ locations: [String: String], status: Int = 302) -> Script {
            Script { request in locations[request.target].map { .redirect(to: $0, status: status) } ?? .normal }
        }
    }
}
