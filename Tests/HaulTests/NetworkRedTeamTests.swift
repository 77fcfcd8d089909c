import Foundation
import Glibc
import Synchronization
import Testing
import HaulTestSupport
@testable import Haul
import SystemPackage

/// A lying server against every path a response can take since the speed rounds: the small file answered
/// whole by its probe, a file kept in memory, a big file in parallel ranges (spliced or read), and HTTPS.
///
/// Each attack is a hand-made response (``MisbehavingServer/Behavior/raw(_:ending:)``) or a scripted fault,
/// and every one is held to the same oracle, whatever Haul does about it: the download ends within the
/// deadline; when it succeeds its bytes are exactly the resource's; when it fails nothing is left under the
/// final name and the error names the server it is about. An attack may also require the file (a response
/// that is odd but valid, or a fault that a retry gets past).
@Suite(.serialized) struct NetworkRedTeamTests {
    typealias Behavior = MisbehavingServer.Behavior
    typealias Script = MisbehavingServer.Script
    typealias Resource = MisbehavingServer.Resource

    static let deadline: Duration = .seconds(30)

    /// Where the response's body goes and how the file is fetched.
    enum Path: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// 3,000 bytes into a file: the probe's one response is the whole file.
        case small
        /// The same over HTTPS.
        case smallTLS
        /// 3,000 bytes kept in memory.
        case memory
        /// 6 MiB in ranges over 8 connections, bodies spliced into the file.
        case segmentedSpliced
        /// The same, bodies read and written with `pwrite`.
        case segmentedReceived
        /// 6 MiB in ranges over HTTPS.
        case segmentedTLS
        /// 6 MiB in ranges over 8 connections, in order to a stream (`-o -`): a failure may leave a prefix there,
        /// never a byte that is not the file's.
        case stream

        var testDescription: String { rawValue }
        var size: Int {
            switch self {
            case .small, .smallTLS, .memory: 3000
            case .segmentedSpliced, .segmentedReceived, .segmentedTLS, .stream: 6 << 20
            }
        }
        var usesTLS: Bool { self == .smallTLS || self == .segmentedTLS }
    }

    /// What the attack must lead to.
    enum Expectation: Sendable {
        /// The right file: the response is valid, or its fault is one a retry gets past.
        case file
        /// The right file or a clear error; never a wrong file.
        case fileOrError
        /// A clear error (the attack never stops), never a file.
        case error
    }

    /// How often the attack is made.
    enum Persistence: Sendable {
        /// Every request (that `Attack.make` answers).
        case always
        /// The first two tries of each distinct request (by `Range` value, or target without one).
        case firstTwoTries
        /// The first try of each distinct request: for a fault that leaves a shorter range to ask for, which
        /// is then attacked once too.
        case firstTry
        /// Only the first request of the whole download.
        case onceOnly
    }

    struct Attack: Sendable, CustomTestStringConvertible {
        var name: String
        var persistence: Persistence
        var expectation: Expectation
        /// A check made on the finished file only (`Repr-Digest`), which a stream has not: there the right
        /// bytes are the right outcome.
        var checksTheFile = false
        /// The response for a request, given the honest response's parts; nil answers honestly.
        var make: @Sendable (_ request: MisbehavingServer.ReceivedRequest, _ honest: Honest) -> Behavior?
        var testDescription: String { name }
    }

    /// The correct response to a request, as parts an attack can change.
    struct Honest: Sendable {
        var status: Int
        var fields: [(String, String)]
        var body: [UInt8]
        /// The range served (the whole file for a 200).
        var range: Range<Int>
        var total: Int

        func field(_ name: String) -> String? { fields.first { $0.0.lowercased() == name.lowercased() }?.1 }

        func replacing(_ name: String, with value: String?) -> Honest {
            var copy = self
            copy.fields.removeAll { $0.0.lowercased() == name.lowercased() }
            if let value { copy.fields.append((name, value)) }
            return copy
        }

        func adding(_ name: String, _ value: String) -> Honest {
            var copy = self
            copy.fields.append((name, value))
            return copy
        }

        /// The head as bytes, with `Content-Length` of the body unless `contentLength` says otherwise (nil: none).
        func head(contentLength: String?? = .some(nil), statusLine: String? = nil) -> [UInt8] {
            var text = statusLine ?? "HTTP/1.1 \(status) \(status == 206 ? "Partial Content" : "OK")"
            text += "\r\n"
            for (name, value) in fields { text += "\(name): \(value)\r\n" }
            switch contentLength {
            case .some(.some(let value)): text += "Content-Length: \(value)\r\n"
            case .some(.none): text += "Content-Length: \(body.count)\r\n"
            case .none: break
            }
            return Array((text + "\r\n").utf8)
        }

        /// Head and body, framed by `Content-Length`.
        var response: [UInt8] { head() + body }

        /// The body in `Transfer-Encoding: chunked`, in chunks of `size` bytes, each size line followed by
        /// `extension`, ending with `trailers`.
        func chunkedResponse(chunk size: Int = 1000, extension chunkExtension: String = "", trailers: String = "") -> [UInt8] {
            var bytes = replacing("Transfer-Encoding", with: "chunked").head(contentLength: .none)
            var offset = 0
            while offset < body.count {
                let end = min(body.count, offset + size)
                bytes += Array("\(String(end - offset, radix: 16))\(chunkExtension)\r\n".utf8) + body[offset..<end] + Array("\r\n".utf8)
                offset = end
            }
            return bytes + Array("0\r\n\(trailers)\r\n".utf8)
        }

        static func of(_ request: MisbehavingServer.ReceivedRequest, _ resource: Resource) -> Honest {
            let total = resource.bytes.count
            var fields: [(String, String)] = [("Accept-Ranges", "bytes")]
            if let etag = resource.etag { fields.append(("ETag", etag)) }
            if let date = resource.lastModified { fields.append(("Last-Modified", date)) }
            fields.append(("Content-Type", resource.contentType))
            if let selected = request.range?.resolved(length: total) {
                fields.append(("Content-Range", "bytes \(selected.lowerBound)-\(selected.upperBound)/\(total)"))
                let range = selected.lowerBound..<(selected.upperBound + 1)
                return Honest(status: 206, fields: fields, body: Array(resource.bytes[range]), range: range, total: total)
            }
            return Honest(status: 200, fields: fields, body: resource.bytes, range: 0..<total, total: total)
        }
    }

    // MARK: The attacks

    static func raw(_ bytes: [UInt8], ending: MisbehavingServer.Ending = .keepAlive) -> Behavior { .raw(bytes, ending: ending) }

    /// A 206 only (a 200 answer to a request without `Range` is left honest): attacks on ranges.
    static func partial(_ make: @escaping @Sendable (Honest) -> Behavior?) -> @Sendable (MisbehavingServer.ReceivedRequest, Honest) -> Behavior? {
        { _, honest in honest.status == 206 ? make(honest) : nil }
    }

    static let lengthAttacks: [Attack] = [
        Attack(name: "Content-Length longer than the body, then close", persistence: .firstTwoTries, expectation: .file) { _, h in
            raw(h.head(contentLength: "\(h.body.count + 10)") + h.body, ending: .closeWithoutCloseNotify)
        },
        Attack(name: "Content-Length shorter than the body", persistence: .firstTwoTries, expectation: .file) { _, h in
            raw(h.head(contentLength: "\(h.body.count - 10)") + h.body)
        },
        Attack(name: "Content-Length shorter than the body, always", persistence: .always, expectation: .error) { _, h in
            raw(h.head(contentLength: "\(h.body.count - 10)") + h.body)
        },
        Attack(name: "Content-Length with a plus sign", persistence: .always, expectation: .error) { _, h in
            raw(h.head(contentLength: "+\(h.body.count)") + h.body)
        },
        Attack(name: "Content-Length with leading zeros", persistence: .always, expectation: .file) { _, h in
            raw(h.head(contentLength: "000\(h.body.count)") + h.body)
        },
        Attack(name: "Content-Length past Int64", persistence: .always, expectation: .error) { _, h in
            raw(h.head(contentLength: "99999999999999999999999") + h.body)
        },
        Attack(name: "Content-Length as an equal list", persistence: .always, expectation: .file) { _, h in
            raw(h.head(contentLength: "\(h.body.count), \(h.body.count)") + h.body)
        },
        Attack(name: "Content-Length twice, equal", persistence: .always, expectation: .file) { _, h in
            raw(h.adding("Content-Length", "\(h.body.count)").head() + h.body)
        },
        Attack(name: "Content-Length twice, unequal", persistence: .always, expectation: .error) { _, h in
            raw(h.adding("Content-Length", "\(h.body.count - 1)").head() + h.body)
        },
        Attack(name: "Content-Range total differs from the probe's", persistence: .always, expectation: .fileOrError, make: partial { h in
            h.range.lowerBound == 0 ? nil
                : raw(h.replacing("Content-Range", with: "bytes \(h.range.lowerBound)-\(h.range.upperBound - 1)/\(h.total + 1)").response)
        }),
        Attack(name: "206 one byte shorter than asked, lengths agreeing", persistence: .firstTwoTries, expectation: .file, make: partial { h in
            var short = h.replacing("Content-Range", with: "bytes \(h.range.lowerBound)-\(h.range.upperBound - 2)/\(h.total)")
            short.body.removeLast()
            return raw(short.response)
        }),
        Attack(name: "206 shorter than asked, always", persistence: .always, expectation: .fileOrError, make: partial { h in
            guard h.range.count > 2 else { return nil }
            var short = h.replacing("Content-Range", with: "bytes \(h.range.lowerBound)-\(h.range.upperBound - 2)/\(h.total)")
            short.body.removeLast()
            return raw(short.response)
        }),
        Attack(name: "206 longer than asked (into the next segment)", persistence: .firstTwoTries, expectation: .file, make: partial { h in
            guard h.range.upperBound + 100 <= h.total else { return nil }
            var long = h.replacing("Content-Range", with: "bytes \(h.range.lowerBound)-\(h.range.upperBound + 99)/\(h.total)")
            long.body += Array(repeating: 0x41, count: 100)
            return raw(long.response)
        }),
        Attack(name: "206 with Content-Range bytes */N", persistence: .firstTwoTries, expectation: .file, make: partial { h in
            raw(h.replacing("Content-Range", with: "bytes */\(h.total)").response)
        }),
        Attack(name: "206 with last before first", persistence: .firstTwoTries, expectation: .file, make: partial { h in
            raw(h.replacing("Content-Range", with: "bytes \(h.range.upperBound - 1)-\(h.range.lowerBound)/\(h.total)").response)
        }),
        Attack(name: "206 whose range runs past its total", persistence: .firstTwoTries, expectation: .file, make: partial { h in
            raw(h.replacing("Content-Range", with: "bytes \(h.range.lowerBound)-\(h.range.upperBound - 1)/\(h.range.upperBound - 1)").response)
        }),
        Attack(name: "206 with an unknown total (/*)", persistence: .firstTwoTries, expectation: .file, make: partial { h in
            raw(h.replacing("Content-Range", with: "bytes \(h.range.lowerBound)-\(h.range.upperBound - 1)/*").response)
        }),
        Attack(name: "Content-Range twice: the asked range, then another", persistence: .always, expectation: .error, make: partial { h in
            let other = h.range.lowerBound == 0 ? "bytes 1-\(h.range.count)/\(h.total)" : "bytes 0-\(h.range.count - 1)/\(h.total)"
            return raw(h.adding("Content-Range", other).response)
        }),
        Attack(name: "Content-Range twice: another range, then the asked one", persistence: .always, expectation: .error, make: partial { h in
            let other = h.range.lowerBound == 0 ? "bytes 1-\(h.range.count)/\(h.total)" : "bytes 0-\(h.range.count - 1)/\(h.total)"
            var swapped = h.replacing("Content-Range", with: nil)
            swapped.fields.append(("Content-Range", other))
            return raw(swapped.adding("Content-Range", "bytes \(h.range.lowerBound)-\(h.range.upperBound - 1)/\(h.total)").response)
        }),
        Attack(name: "200 with the whole file to a mid-file range", persistence: .firstTwoTries, expectation: .file, make: partial { h in
            h.range.lowerBound == 0 ? nil : .ignoreRange
        }),
        Attack(name: "200 carrying the asked range and its Content-Range (a 206 mislabelled)", persistence: .firstTwoTries, expectation: .file, make: partial { h in
            raw(h.head(statusLine: "HTTP/1.1 200 OK") + h.body)
        }),
        Attack(name: "200 carrying the asked range and its Content-Range, always", persistence: .always, expectation: .fileOrError, make: partial { h in
            raw(h.head(statusLine: "HTTP/1.1 200 OK") + h.body)
        }),
                Attack(name: "200 with the whole file to every mid-file range (same strong ETag)", persistence: .always, expectation: .file, make: partial { h in
            h.range.lowerBound == 0 ? nil : .ignoreRange
        }),
                Attack(name: "204 with a body", persistence: .onceOnly, expectation: .file) { _, h in
            raw(Array("HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\nhello".utf8))
        },
        Attack(name: "304 to a request that asked no condition", persistence: .always, expectation: .error) { _, h in
            raw(h.head(statusLine: "HTTP/1.1 304 Not Modified") + h.body)
        },
    ]

    static let framingAttacks: [Attack] = [
        Attack(name: "chunked with extensions", persistence: .always, expectation: .file) { _, h in
            raw(h.chunkedResponse(chunk: 777, extension: ";name=\"va;lue\";x"))
        },
        Attack(name: "chunk size that overflows", persistence: .always, expectation: .error) { _, h in
            raw(h.replacing("Transfer-Encoding", with: "chunked").head(contentLength: .none) + Array("1000000000000000a\r\n".utf8) + h.body)
        },
        Attack(name: "chunked with trailers saying Content-Length and Content-Range", persistence: .always, expectation: .file) { _, h in
            raw(h.chunkedResponse(trailers: "Content-Length: 7\r\nContent-Range: bytes 0-6/7\r\nETag: \"other\"\r\n"))
        },
        Attack(name: "Transfer-Encoding and Content-Length", persistence: .always, expectation: .error) { _, h in
            raw(h.replacing("Transfer-Encoding", with: "chunked").head() + h.body)
        },
        Attack(name: "Transfer-Encoding: gzip, chunked", persistence: .always, expectation: .error) { _, h in
            raw(h.replacing("Transfer-Encoding", with: "gzip, chunked").head(contentLength: .none) + Array("0\r\n\r\n".utf8))
        },
        Attack(name: "bare LF line ends", persistence: .always, expectation: .error) { _, h in
            raw(Array(String(decoding: h.head(), as: UTF8.self).replacingOccurrences(of: "\r\n", with: "\n").utf8) + h.body)
        },
        Attack(name: "obs-fold inside Content-Range", persistence: .firstTwoTries, expectation: .file, make: partial { h in
            raw(h.replacing("Content-Range", with: "bytes \(h.range.lowerBound)-\(h.range.upperBound - 1)\r\n /\(h.total)").response)
        }),
        Attack(name: "obs-fold inside ETag", persistence: .always, expectation: .fileOrError) { _, h in
            raw(h.replacing("ETag", with: "\"haul-\r\n \(h.total)\"").response)
        },
        Attack(name: "103 Early Hints, then the answer", persistence: .always, expectation: .file) { _, h in
            raw(Array("HTTP/1.1 103 Early Hints\r\nLink: </x>; rel=preload\r\nContent-Length: 99\r\n\r\n".utf8) + h.response)
        },
        Attack(name: "101 Switching Protocols", persistence: .always, expectation: .error) { _, h in
            raw(Array("HTTP/1.1 101 Switching Protocols\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n\r\n".utf8) + h.response)
        },
        Attack(name: "a complete second response right after the body", persistence: .always, expectation: .fileOrError) { _, h in
            raw(h.response + Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!".utf8))
        },
        Attack(name: "garbage after the body, 30 ms later", persistence: .always, expectation: .fileOrError) { _, h in
            .raw(pieces: [MisbehavingServer.RawPiece(h.response), MisbehavingServer.RawPiece(Array("junk".utf8), afterMilliseconds: 30)])
        },
        Attack(name: "close in the middle of a chunk", persistence: .firstTwoTries, expectation: .file) { _, h in
            raw(Array(h.chunkedResponse(chunk: 1000).prefix(h.head().count + 600)), ending: .closeWithoutCloseNotify)
        },
        Attack(name: "chunked body shorter than its range, properly ended", persistence: .firstTwoTries, expectation: .file) { _, h in
            var short = h
            short.body.removeLast(h.body.count / 3)
            return raw(short.chunkedResponse())
        },
        Attack(name: "chunked body shorter than its range, always", persistence: .always, expectation: .fileOrError) { _, h in
            var short = h
            short.body.removeLast(h.body.count / 3)
            return raw(short.chunkedResponse())
        },
        Attack(name: "close-delimited body shorter than its range, clean close", persistence: .firstTwoTries, expectation: .file) { _, h in
            raw(h.head(contentLength: .none) + h.body.prefix(h.body.count - 7), ending: .close)
        },
        Attack(name: "Content-Length body cut short by a clean close", persistence: .firstTry, expectation: .file) { _, h in
            raw(h.head() + h.body.prefix(h.body.count - 7), ending: .close)
        },
                Attack(name: "HTTP/1.0 answer without length, keep-alive claimed", persistence: .always, expectation: .fileOrError) { _, h in
            raw(h.adding("Connection", "keep-alive").head(contentLength: .none, statusLine: "HTTP/1.0 \(h.status) X") + h.body, ending: .close)
        },
    ]

    static let representationAttacks: [Attack] = [
        Attack(name: "Content-Encoding on a range", persistence: .always, expectation: .fileOrError, make: partial { h in
            raw(h.adding("Content-Encoding", "gzip").response)
        }),
        Attack(name: "Content-Encoding on the second segment only", persistence: .always, expectation: .fileOrError, make: partial { h in
            h.range.lowerBound == 0 ? nil : raw(h.adding("Content-Encoding", "br").response)
        }),
        Attack(name: "multipart/byteranges on the second segment only", persistence: .always, expectation: .fileOrError, make: partial { h in
            h.range.lowerBound == 0 ? nil : raw(h.replacing("Content-Type", with: "multipart/byteranges; boundary=X").response)
        }),
        Attack(name: "Content-Type text/html on later segments", persistence: .always, expectation: .fileOrError, make: partial { h in
            h.range.lowerBound == 0 ? nil : raw(h.replacing("Content-Type", with: "text/html").response)
        }),
        Attack(name: "Repr-Digest that lies", persistence: .always, expectation: .error, checksTheFile: true) { _, h in
            raw(h.adding("Repr-Digest", "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:").response)
        },
        Attack(name: "Repr-Digest that lies on later segments only", persistence: .always, expectation: .fileOrError, make: partial { h in
            h.range.lowerBound == 0 ? nil : raw(h.adding("Repr-Digest", "sha-256=:47DEQpj8HBSa+/TImW+5JCeuQeRkm5NMpJWZG3hSuFU=:").response)
        }),
        Attack(name: "Content-Digest and Digest that lie (about the content, not the file)", persistence: .always, expectation: .file) { _, h in
            raw(h.adding("Content-Digest", "sha-256=:AAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA=:").adding("Digest", "SHA-256=AAAA").response)
        },
    ]

    static let validatorAttacks: [Attack] = [
        Attack(name: "strong ETag turns weak on later segments", persistence: .always, expectation: .fileOrError, make: partial { h in
            h.range.lowerBound == 0 ? nil : raw(h.replacing("ETag", with: "W/\(h.field("ETag")!)").response)
        }),
        Attack(name: "ETag dropped on later segments", persistence: .always, expectation: .fileOrError, make: partial { h in
            h.range.lowerBound == 0 ? nil : raw(h.replacing("ETag", with: nil).response)
        }),
        Attack(name: "same ETag, another Last-Modified, on later segments", persistence: .always, expectation: .fileOrError, make: partial { h in
            h.range.lowerBound == 0 ? nil : raw(h.replacing("Last-Modified", with: "Thu, 22 Oct 2015 07:28:00 GMT").response)
        }),
        Attack(name: "ETag twice: the download's, then another", persistence: .always, expectation: .fileOrError, make: partial { h in
            h.range.lowerBound == 0 ? nil : raw(h.adding("ETag", "\"another\"").response)
        }),
        Attack(name: "ETag twice on every answer", persistence: .always, expectation: .error) { _, h in
            raw(h.adding("ETag", "\"another\"").response)
        },
        Attack(name: "Last-Modified that is not a date on later segments", persistence: .always, expectation: .fileOrError, make: partial { h in
            h.range.lowerBound == 0 ? nil : raw(h.replacing("Last-Modified", with: "yesterday").response)
        }),
    ]

    static let timeAttacks: [Attack] = [
        Attack(name: "503 with Retry-After -1", persistence: .firstTwoTries, expectation: .file) { _, _ in .status(503, retryAfter: "-1") },
        Attack(name: "503 with Retry-After a date in the past", persistence: .firstTwoTries, expectation: .file) { _, _ in
            .status(503, retryAfter: "Wed, 21 Oct 2015 07:28:00 GMT")
        },
        Attack(name: "503 with Retry-After past Int64", persistence: .firstTwoTries, expectation: .fileOrError) { _, _ in
            .status(503, retryAfter: "99999999999999999999999")
        },
        Attack(name: "429 with Retry-After 0.5 (not an integer)", persistence: .firstTwoTries, expectation: .file) { _, _ in
            .status(429, retryAfter: "0.5")
        },
        Attack(name: "head dripped a byte per 5 ms", persistence: .firstTwoTries, expectation: .file) { _, _ in .dripHead(bytes: 1, everyMilliseconds: 5) },
        Attack(name: "body dripped a byte per 20 ms for 30 bytes", persistence: .firstTwoTries, expectation: .file) { _, _ in
            .trickle(bytes: 1, everyMilliseconds: 20, forBytes: 30)
        },
        Attack(name: "keep-alive connection closed when reused", persistence: .always, expectation: .file) { request, _ in
            request.indexOnConnection == 1 ? .closeWithoutResponse : nil
        },
        Attack(name: "keep-alive connection closed mid-body when reused", persistence: .firstTwoTries, expectation: .file) { request, h in
            request.indexOnConnection >= 1 ? .closeMidBody(afterBytes: h.body.count / 2) : nil
        },
        Attack(name: "a response before the request, then the real one", persistence: .onceOnly, expectation: .fileOrError) { _, h in
            raw(h.response + Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!".utf8) + h.response)
        },
    ]

    static let allAttacks = lengthAttacks + framingAttacks + representationAttacks + validatorAttacks + timeAttacks

    // MARK: Running one attack

    let resourceSeed: UInt64 = 34

    func resource(for path: Path) -> Resource { .pattern(size: path.size, seed: resourceSeed) }

    func options(for path: Path) throws -> DownloadOptions {
        var options = DownloadOptions(synchronizesToDisk: false, connections: 8, minimumSegment: 256 << 10)
        options.retry = RetryPolicy(triesPerRange: 4, totalRetries: 40, baseDelay: .milliseconds(5), maxDelay: .milliseconds(40))
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: .seconds(5))
        options.splicesBodies = path != .segmentedReceived
        if path.usesTLS { options.tls.caFile = try TestCertificateAuthority.shared().caCertificatePath }
        return options
    }

    func script(_ attack: Attack, resource: Resource) -> Script {
        let seen = Tries()
        return Script { request in
            let tries = seen.next(request.rangeHeader ?? request.target)
            let isFirst = seen.next("(any request)") == 0
            switch attack.persistence {
            case .always: break
            case .firstTwoTries: guard tries < 2 else { return .normal }
            case .firstTry: guard tries < 1 else { return .normal }
            case .onceOnly: guard isFirst else { return .normal }
            }
            return attack.make(request, Honest.of(request, resource)) ?? .normal
        }
    }

    /// How many times each key was seen before.
    final class Tries: Sendable {
        private let counts = Mutex<[String: Int]>([:])

        func next(_ key: String) -> Int {
            counts.withLock { counts in
                defer { counts[key, default: 0] += 1 }
                return counts[key, default: 0]
            }
        }
    }

    /// Runs `attack` on `path` and checks the oracle; returns the outcome for more checks.
    @discardableResult
    func attackDownload(_ attack: Attack, on path: Path, sourceLocation: SourceLocation = #_sourceLocation) async throws -> Result<DownloadResult, HaulError> {
        let resource = resource(for: path)
        let server = try MisbehavingServer(resource: resource, script: script(attack, resource: resource),
                                           tlsCertificate: path.usesTLS ? TestCertificateAuthority.shared().server : nil)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let file = directory + "/f"
        var streamDescriptor: Int32 = -1
        defer { if streamDescriptor >= 0 { close(streamDescriptor) } }
        let destination: DownloadRequest.Destination
        switch path {
        case .memory: destination = .memory(limit: 1 << 20)
        case .stream:
            streamDescriptor = open(directory + "/stream", O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
            guard streamDescriptor >= 0 else { throw HaulError.unexpected("open for the stream: errno \(errno)") }
            destination = .stream(FileDescriptor(rawValue: streamDescriptor))
        default: destination = .file(file)
        }
        let client = try HaulClient(options: options(for: path))
        let task = client.start(DownloadRequest(url: server.url("/f"), destination: destination))
        guard let result = await outcomeWithin(Self.deadline, of: task) else {
            Issue.record("\(attack.name) on \(path): the download did not end within \(Self.deadline)", sourceLocation: sourceLocation)
            await client.shutdown()
            return .failure(.unexpected("test deadline"))
        }
        await client.shutdown()
        switch result {
        case .success(let downloaded):
            let bytes = path == .memory ? downloaded.body.map { Array($0) }
                : FileManager.default.contents(atPath: path == .stream ? directory + "/stream" : file).map { Array($0) }
            let right = bytes.map { sameBytes($0, resource.bytes) } ?? false
            #expect(downloaded.bytes == Int64(resource.bytes.count), "\(attack.name) on \(path): \(downloaded.bytes) bytes reported for a file of \(resource.bytes.count)",
                    sourceLocation: sourceLocation)
            #expect(right, "\(attack.name) on \(path): exit 0 with a WRONG result: \(bytes.map { "\($0.count) bytes starting \(String(decoding: $0.prefix(24), as: UTF8.self).debugDescription)" } ?? "nothing")",
                    sourceLocation: sourceLocation)
            #expect(attack.expectation != .error || (attack.checksTheFile && path == .stream),
                    "\(attack.name) on \(path): expected an error, got the file", sourceLocation: sourceLocation)
        case .failure(let error):
            #expect(attack.expectation != .file, "\(attack.name) on \(path): expected the file, got: \(error)", sourceLocation: sourceLocation)
            #expect(!FileManager.default.fileExists(atPath: file), "\(attack.name) on \(path): failed (\(error)) but left a file under the final name",
                    sourceLocation: sourceLocation)
            if path == .stream {
                let streamed = FileManager.default.contents(atPath: directory + "/stream").map { Array($0) } ?? []
                #expect(streamed.count <= resource.bytes.count && sameBytes(streamed, resource.bytes.prefix(streamed.count)),
                        "\(attack.name) on \(path): the stream holds \(streamed.count) bytes that are not a prefix of the file", sourceLocation: sourceLocation)
            }
            let text = error.description
            #expect(text.contains("127.0.0.1") || text.contains("localhost"), "\(attack.name) on \(path): the error names no server: \(text)",
                    sourceLocation: sourceLocation)
            print("[\(path)] \(attack.name): \(text)")
        }
        return result
    }

    @Test(arguments: lengthAttacks, Path.allCases)
    func lengths(attack: Attack, path: Path) async throws { try await attackDownload(attack, on: path) }

    @Test(arguments: framingAttacks, Path.allCases)
    func framing(attack: Attack, path: Path) async throws { try await attackDownload(attack, on: path) }

    @Test(arguments: representationAttacks, Path.allCases)
    func representation(attack: Attack, path: Path) async throws { try await attackDownload(attack, on: path) }

    @Test(arguments: validatorAttacks, Path.allCases)
    func validators(attack: Attack, path: Path) async throws { try await attackDownload(attack, on: path) }

    @Test(arguments: timeAttacks, Path.allCases)
    func time(attack: Attack, path: Path) async throws { try await attackDownload(attack, on: path) }

    // MARK: Connection reuse across a list

    /// How the bytes after each response of a list arrive.
    enum Extra: String, CaseIterable, Sendable, CustomTestStringConvertible {
        /// Junk in the same write as the response.
        case junkAtOnce
        /// Junk 3 ms later: often after the next request went out on the connection.
        case junkSoon
        /// Junk 40 ms later: after the next request went out.
        case junkLater
        /// A complete response (`200`, `EVIL!`) in the same write as the response.
        case responseInTheSameWrite
        /// A complete response, with the next download started only once it was sent: it waits in the idle
        /// connection when the next request would reuse it.
        case responseWhileIdle

        var testDescription: String { rawValue }
        var bytes: [UInt8] {
            switch self {
            case .junkAtOnce, .junkSoon, .junkLater: Array("junk after the body".utf8)
            case .responseInTheSameWrite, .responseWhileIdle: Array("HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nEVIL!".utf8)
            }
        }
        var delayMilliseconds: Int {
            switch self {
            case .junkAtOnce, .responseInTheSameWrite: 0
            case .junkSoon: 3
            case .junkLater: 40
            case .responseWhileIdle: 5
            }
        }
    }

    /// What a list of small files (one client, `-i`'s path: each download takes the pool's idle connection)
    /// gets when every response is followed by more bytes. No file may be another's bytes or those extra bytes.
    ///
    /// A copy in a second write right after the response was read as the next file's answer (2 of 24 files
    /// `EVIL!` or the previous file, exit 0) when it arrived in the loop turn that read the response: the
    /// checkout now peeks then (`ConnectionPoolReuseTests`, which holds that order exactly; here it depends on
    /// scheduling). Not here, because no HTTP/1.1 client can hold it: a copy that arrives *after* the next
    /// request went out is read as that request's answer — nothing in HTTP/1.1 ties a response to its request
    /// but the order — and the list is off by one from then on. curl and wget do the same; only a server that
    /// lies can do it, and such a server can answer anything anyway.
    @Test(arguments: Extra.allCases, [false, true])
    func bytesAfterEachResponseNeverBecomeTheNextFile(extra: Extra, tls: Bool) async throws {
        let files = 24
        let resources = (0..<files).map { Resource.pattern(size: 1000 + $0 * 37, seed: UInt64($0)) }
        let script = Script { request in
            guard let index = Int(request.target.dropFirst(2)), resources.indices.contains(index) else { return .status(404) }
            let honest = Honest.of(request, resources[index])
            if extra == .responseInTheSameWrite { return .raw(honest.response + extra.bytes) }
            return .raw(pieces: [MisbehavingServer.RawPiece(honest.response), MisbehavingServer.RawPiece(extra.bytes, afterMilliseconds: extra.delayMilliseconds)])
        }
        let server = try MisbehavingServer(resource: resources[0], script: script,
                                           tlsCertificate: tls ? TestCertificateAuthority.shared().server : nil)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let client = try HaulClient(options: options(for: tls ? .smallTLS : .small))
        var wrong: [String] = []
        var failed: [String] = []
        for index in 0..<files {
            let path = directory + "/f\(index)"
            if extra == .responseWhileIdle {
                // The previous file's response has had its second write sent (or tried, on a connection closed).
                let sent = try await eventually(within: 10) { server.exchanges.last.map { $0.rawPiecesSent == 2 } ?? true }
                #expect(sent, "the server sent every extra response before file \(index)")
            }
            let task = client.start(DownloadRequest(url: server.url("/f\(index)"), destination: .file(path)))
            guard let result = await outcomeWithin(Self.deadline, of: task) else {
                Issue.record("file \(index) did not end within \(Self.deadline)")
                break
            }
            switch result {
            case .success:
                let bytes = FileManager.default.contents(atPath: path).map { Array($0) } ?? []
                if !sameBytes(bytes, resources[index].bytes) { wrong.append("f\(index): \(bytes.count) bytes") }
            case .failure(let error):
                failed.append("f\(index): \(error)")
                #expect(!FileManager.default.fileExists(atPath: path), "f\(index) failed but left a file")
            }
        }
        await client.shutdown()
        #expect(wrong.isEmpty, "exit 0 with a WRONG file: \(wrong)")
        #expect(failed.isEmpty, "a retry on a new connection gets each file: \(failed)")
        print("[list, \(extra), TLS \(tls)] \(server.connectionsAccepted) connections for \(server.exchanges.count) requests, \(failed.count) failed")
    }

    // MARK: Servers that never answer

    /// A server that accepts and never answers, or answers a head and never the body: each try ends at the
    /// idle timeout and the download fails naming the server, on every path.
    @Test(arguments: [Path.small, .segmentedSpliced, .smallTLS], [false, true])
    func aServerThatNeverAnswersEndsTheDownload(path: Path, afterTheHead: Bool) async throws {
        let resource = resource(for: path)
        let behavior: Behavior = afterTheHead ? .stallMidBody(afterBytes: 0, .untilStopped) : .stallBeforeHead(.untilStopped)
        let server = try MisbehavingServer(resource: resource, script: .always(behavior),
                                           tlsCertificate: path.usesTLS ? TestCertificateAuthority.shared().server : nil)
        defer { server.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = try options(for: path)
        options.timeouts = ConnectionTimeouts(connect: .seconds(5), tlsHandshake: .seconds(5), idle: .milliseconds(300))
        options.retry = RetryPolicy(triesPerRange: 2, totalRetries: 4, baseDelay: .milliseconds(5), maxDelay: .milliseconds(20))
        let client = try HaulClient(options: options)
        let task = client.start(DownloadRequest(url: server.url("/f"), destination: .file(directory + "/f")))
        let result = await outcomeWithin(Self.deadline, of: task)
        await client.shutdown()
        guard case .failure(let error)? = result else {
            Issue.record("a silent server: expected a failure within \(Self.deadline), got \(String(describing: result))"); return
        }
        #expect(error.description.contains(path.usesTLS ? "localhost" : "127.0.0.1"), "\(error)")
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))
        print("[\(path)] silent server (after the head: \(afterTheHead)): \(error)")
    }
}
