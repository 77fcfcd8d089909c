import Glibc

extension MisbehavingServer.Core {
    typealias Behavior = MisbehavingServer.Behavior
    typealias Resource = MisbehavingServer.Resource

    /// Serves requests on one connection until the client, the script or `stop()` ends it.
    func serveConnection(fd: Int32, id connectionID: Int) {
        let transport: ServerTransport
        if let tls {
            guard let tlsTransport = TLSTransport(fd: fd, context: tls) else { return }
            transport = tlsTransport
        } else {
            transport = PlainTransport(fd: fd)
        }
        var reader = RequestHeadReader()
        var indexOnConnection = 0
        while case .head(let head) = reader.next(from: transport) {
            let (request, behavior, resource) = state.withLock { state in
                let request = MisbehavingServer.ReceivedRequest(
                    index: state.exchanges.count, connectionID: connectionID, indexOnConnection: indexOnConnection,
                    method: head.method, target: head.target, version: head.version, headerFields: head.fields)
                state.exchanges.append(MisbehavingServer.Exchange(request: request))
                return (request, state.script, state.resource)
            }
            indexOnConnection += 1
            let chosen = behavior.decide(request)
            if let fault = chosen.chaosFault { state.withLock { $0.exchanges[request.index].chaosFault = fault } }
            let served = chosen.resource ?? (chosen.servesOtherVersion ? resource.otherVersion : resource)
            let keepOpen = respond(to: request, with: chosen, resource: served, over: transport)
            if !keepOpen { return }
        }
        transport.finish(graceful: true)
    }

    /// Sends one response; returns whether the connection stays open for another request.
    private func respond(to request: MisbehavingServer.ReceivedRequest, with behavior: Behavior, resource: Resource,
                         over transport: ServerTransport) -> Bool {
        if let stall = behavior.stallBeforeHead, !pause(stall) { return false }
        if let interims = behavior.interims, !sendInterims(interims, for: request, over: transport) { return false }
        let clientWantsClose = request.header("Connection")?.lowercased().contains("close") == true
            || (request.version == "HTTP/1.0" && request.header("Connection")?.lowercased().contains("keep-alive") != true)
        let closeDelimited = behavior.framing == .closeDelimited && behavior.substitute == nil
        let closesAfter = clientWantsClose || behavior.ending != .keepAlive || closeDelimited
        var fields: [(String, String)] = closesAfter ? [("Connection", "close")] : []

        if let substitute = behavior.substitute {
            switch substitute {
            case .closeWithoutResponse:
                transport.finish(graceful: false)
                return false
            case .garbage(let bytes):
                _ = transport.write(bytes)
                transport.finish(graceful: false)
                return false
            case .raw(let pieces, let ending):
                record(request, status: Self.statusOfRaw(pieces.first?.bytes ?? []) ?? 0, bodyOffset: nil)
                for piece in pieces {
                    if piece.pauseMilliseconds > 0, !pause(.seconds(Double(piece.pauseMilliseconds) / 1000)) { return false }
                    let written = transport.write(piece.bytes)
                    state.withLock { $0.exchanges[request.index].rawPiecesSent += 1 }
                    guard written else { return false }
                }
                guard ending == .keepAlive && !clientWantsClose else {
                    transport.finish(graceful: ending != .closeWithoutCloseNotify)
                    return false
                }
                return true
            case .status(let status, let retryAfter):
                if let retryAfter { fields.append(("Retry-After", retryAfter)) }
                return sendSimple(status: status, fields: fields, body: "\(status) \(Self.reason(status))\n", request: request,
                                  behavior: behavior, closesAfter: closesAfter, over: transport)
            case .redirect(let status, let location):
                fields.append(("Location", location))
                return sendSimple(status: status, fields: fields, body: "", request: request, behavior: behavior,
                                  closesAfter: closesAfter, over: transport)
            case .oversizedHead(let fieldBytes):
                let filler = String(repeating: "x", count: 1000)
                for index in 0..<max(1, fieldBytes / (filler.count + 16)) { fields.append(("X-Filler-\(index)", filler)) }
                return sendSimple(status: 200, fields: fields, body: "", request: request, behavior: behavior,
                                  closesAfter: closesAfter, over: transport)
            }
        }

        // The resource, whole or in part.
        let length = resource.bytes.count
        if let refusal = Self.refusal(of: request, by: behavior.rangeHandling, length: length) {
            if refusal == 416 { fields.append(("Content-Range", "bytes */\(length)")) }
            return sendSimple(status: refusal, fields: fields, body: "\(refusal) \(Self.reason(refusal))\n", request: request,
                              behavior: behavior, closesAfter: closesAfter, over: transport)
        }
        var status = 200
        var bodyRange = 0..<length
        if behavior.rangeHandling != .ignore, let rangeHeader = request.rangeHeader,
            let specifier = MisbehavingServer.ByteRangeSpecifier(fieldValue: rangeHeader),
            behavior.ignoresIfRange || ifRangeMatches(request.header("If-Range"), resource)
        {
            if let selected = specifier.resolved(length: length) {
                status = 206
                bodyRange = selected.lowerBound..<(selected.upperBound + 1)
                switch behavior.rangeHandling {
                case .shiftContentRange(let offset):
                    fields.append(("Content-Range", "bytes \(selected.lowerBound + offset)-\(selected.upperBound + offset)/\(length)"))
                case .omitContentRange:
                    break
                case .honor, .ignore, .refuseBoundedPastEnd, .refuseEveryRange:
                    fields.append(("Content-Range", "bytes \(selected.lowerBound)-\(selected.upperBound)/\(length)"))
                }
            } else if length == 0 && behavior.emptyRangeAnswer == .partialContentMinusOne {
                // webfs: "the bytes from 0 to -1 of 0", a 206 with an empty body.
                status = 206
                bodyRange = 0..<0
                fields.append(("Content-Range", "bytes 0--1/0"))
            } else {
                // Real servers (nginx, caddy, h2o) send a short text body with their 416.
                fields.append(("Content-Range", "bytes */\(length)"))
                return sendSimple(status: 416, fields: fields, body: "416 Range Not Satisfiable\n", request: request,
                                  behavior: behavior, closesAfter: closesAfter, over: transport)
            }
        }
        fields.append(("Accept-Ranges", "bytes"))
        if let etag = resource.etag { fields.append(("ETag", etag)) }
        if let lastModified = resource.lastModified { fields.append(("Last-Modified", lastModified)) }
        let multipart = status == 206 ? behavior.multipartByteranges : nil
        fields.append(("Content-Type", multipart?.contentType ?? resource.contentType))
        if let disposition = behavior.contentDisposition { fields.append(("Content-Disposition", disposition)) }
        if let coding = behavior.contentEncoding { fields.append(("Content-Encoding", coding)) }
        for field in behavior.extraFields { fields.append((field.name, field.value)) }
        var body = Self.body(of: resource, range: bodyRange, overrun: behavior.overrunBytes ?? 0)
        if let multipart { body = Self.multipartBody(of: resource, range: bodyRange, multipart, cutTo: body.count) }
        if behavior.contentEncoding != nil { body = ArraySlice(body.map { $0 ^ 0x5A }) }
        switch behavior.framing {
        case .contentLength: fields.append(("Content-Length", "\(body.count)"))
        case .chunked: fields.append(("Transfer-Encoding", "chunked"))
        case .closeDelimited: break
        }
        record(request, status: status, bodyOffset: bodyRange.lowerBound)
        guard writeHead(Self.head(status: status, fields: fields), behavior: behavior, over: transport) else { return false }
        guard request.method != "HEAD" else { return finish(behavior: behavior, closesAfter: closesAfter, over: transport) }
        guard sendBody(body, of: request, behavior: behavior, over: transport) else { return false }
        return finish(behavior: behavior, closesAfter: closesAfter, over: transport)
    }

    /// The status code of a hand-made response (the three digits after the first space), for the record.
    private static func statusOfRaw(_ bytes: [UInt8]) -> Int? {
        guard let space = bytes.firstIndex(of: UInt8(ascii: " ")), space + 4 <= bytes.count else { return nil }
        return Int(String(decoding: bytes[(space + 1)..<(space + 4)], as: UTF8.self))
    }

    /// The bytes of `range`, then `overrun` more: the resource's following bytes, filler past its end.
    private static func body(of resource: Resource, range: Range<Int>, overrun: Int) -> ArraySlice<UInt8> {
        guard overrun > 0 else { return resource.bytes[range] }
        let followingEnd = min(resource.bytes.count, range.upperBound + overrun)
        var bytes = Array(resource.bytes[range.lowerBound..<followingEnd])
        let filler = Array("<overrun past the range>".utf8)
        var fillerIndex = 0
        while bytes.count < range.count + overrun {
            bytes.append(filler[fillerIndex % filler.count])
            fillerIndex += 1
        }
        return bytes[...]
    }

    /// The status that refuses this request's range under `handling`, if it does.
    private static func refusal(of request: MisbehavingServer.ReceivedRequest, by handling: MisbehavingServer.RangeHandling,
                                length: Int) -> Int? {
        switch handling {
        case .refuseEveryRange(let status):
            return request.rangeHeader == nil ? nil : status
        case .refuseBoundedPastEnd(let status):
            guard case .bounded(_, let last)? = request.range, last >= length else { return nil }
            return status
        case .honor, .ignore, .shiftContentRange, .omitContentRange:
            return nil
        }
    }

    /// `range` of the resource as one MIME part of a `multipart/byteranges` body, cut to `count` bytes.
    private static func multipartBody(of resource: Resource, range: Range<Int>, _ multipart: MisbehavingServer.MultipartByteranges,
                                      cutTo count: Int) -> ArraySlice<UInt8> {
        let last = max(range.lowerBound, range.upperBound - 1)
        var bytes = Array("\r\n--\(multipart.boundary)\r\nContent-Type: \(resource.contentType)\r\nContent-Range: bytes \(range.lowerBound)-\(last)/\(resource.bytes.count)\r\n\r\n".utf8)
        bytes += resource.bytes[range]
        bytes += Array("\r\n--\(multipart.boundary)--\r\n".utf8)
        return bytes.prefix(count)
    }

    /// `100 Continue` responses, as many as `interims` says (forever when it gives no count); false if the
    /// connection ended or the server stopped.
    private func sendInterims(_ interims: MisbehavingServer.Interims, for request: MisbehavingServer.ReceivedRequest,
                              over transport: ServerTransport) -> Bool {
        var sent = 0
        while interims.count.map({ sent < $0 }) ?? true {
            guard transport.write(Array("HTTP/1.1 100 Continue\r\n\r\n".utf8)) else { return false }
            sent += 1
            state.withLock { $0.exchanges[request.index].interimResponsesSent = sent }
            guard pause(.seconds(Double(interims.intervalMilliseconds) / 1000)) else { return false }
        }
        return true
    }

    /// Writes a response head, in pieces when the behavior drips it; false if the connection ended.
    private func writeHead(_ head: [UInt8], behavior: Behavior, over transport: ServerTransport) -> Bool {
        guard let drip = behavior.headDrip else { return transport.write(head) }
        var sent = 0
        while sent < head.count {
            let end = min(head.count, sent + max(1, drip.bytes))
            guard transport.write(Array(head[sent..<end])) else { return false }
            sent = end
            if sent < head.count, !pause(.seconds(Double(drip.intervalMilliseconds) / 1000)) { return false }
        }
        return true
    }

    /// Sends the body piece by piece, applying drip, mid-body stall and cut; false if the connection ended.
    private func sendBody(_ body: ArraySlice<UInt8>, of request: MisbehavingServer.ReceivedRequest, behavior: Behavior,
                          over transport: ServerTransport) -> Bool {
        let chunked = behavior.framing == .chunked
        var sent = 0
        var stalled = false
        while sent < body.count || (behavior.closeAfterBodyBytes == sent) {
            if let cut = behavior.closeAfterBodyBytes, sent >= cut {
                transport.finish(graceful: false)
                return false
            }
            if let midBody = behavior.midBodyStall, !stalled, sent >= midBody.afterBytes {
                stalled = true
                guard pause(midBody.stall) else { return false }
            }
            // The next piece ends at the next event: the drip size, the cut, the stall, or 256 KiB.
            let dripping = behavior.drip.map { sent < $0.forBytes ?? Int.max } ?? false
            var pieceSize = min(body.count - sent, max(1, dripping ? behavior.drip!.bytes : 256 * 1024))
            if let cut = behavior.closeAfterBodyBytes { pieceSize = min(pieceSize, cut - sent) }
            if let midBody = behavior.midBodyStall, !stalled { pieceSize = min(pieceSize, midBody.afterBytes - sent) }
            pieceSize = max(pieceSize, 0)
            if pieceSize > 0 {
                // A hold (`hold(afterBodyBytes:)`) may let through only part of the piece, or wait.
                pieceSize = bodyAllowance(pieceSize)
                guard pieceSize > 0 else { return false }
                let start = body.startIndex + sent
                let piece = body[start..<(start + pieceSize)]
                if chunked { guard transport.write(Array("\(String(pieceSize, radix: 16))\r\n".utf8)) else { return false } }
                guard piece.withUnsafeBytes({ transport.write($0) }) else { return false }
                if chunked { guard transport.write(Array("\r\n".utf8)) else { return false } }
                sent += pieceSize
                state.withLock { $0.exchanges[request.index].bodyBytesSent = sent }
            }
            if let drip = behavior.drip, sent < body.count, sent < drip.forBytes ?? Int.max, !isReleased, !pause(.seconds(Double(drip.intervalMilliseconds) / 1000)) {
                return false
            }
        }
        if chunked { return transport.write(Array("0\r\n\r\n".utf8)) }
        return true
    }

    private func sendSimple(status: Int, fields: [(String, String)], body: String, request: MisbehavingServer.ReceivedRequest,
                            behavior: Behavior, closesAfter: Bool, over transport: ServerTransport) -> Bool {
        record(request, status: status, bodyOffset: nil)
        let bodyBytes = Array(body.utf8)
        let fields = fields + [("Content-Type", "text/plain"), ("Content-Length", "\(bodyBytes.count)")]
        guard writeHead(Self.head(status: status, fields: fields), behavior: behavior, over: transport) else { return false }
        if request.method != "HEAD" && !bodyBytes.isEmpty { guard transport.write(bodyBytes) else { return false } }
        return finish(behavior: behavior, closesAfter: closesAfter, over: transport)
    }

    /// Applies the behavior's ending; returns whether the connection stays open.
    private func finish(behavior: Behavior, closesAfter: Bool, over transport: ServerTransport) -> Bool {
        guard closesAfter else { return true }
        transport.finish(graceful: behavior.ending != .closeWithoutCloseNotify)
        return false
    }

    private func record(_ request: MisbehavingServer.ReceivedRequest, status: Int, bodyOffset: Int?) {
        state.withLock {
            $0.exchanges[request.index].status = status
            $0.exchanges[request.index].bodyOffset = bodyOffset
        }
    }

    /// RFC 9110 §13.1.5: a range request with a non-matching `If-Range` gets the whole representation.
    /// Entity tags compare strongly (a weak tag never matches); dates must equal `Last-Modified` exactly.
    private func ifRangeMatches(_ ifRange: String?, _ resource: Resource) -> Bool {
        guard let ifRange else { return true }
        if ifRange.hasPrefix("\"") { return ifRange == resource.etag }
        if ifRange.hasPrefix("W/") { return false }
        return ifRange == resource.lastModified
    }

    private static func head(status: Int, fields: [(String, String)]) -> [UInt8] {
        var text = "HTTP/1.1 \(status) \(reason(status))\r\n"
        for (name, value) in fields { text += "\(name): \(value)\r\n" }
        text += "\r\n"
        return Array(text.utf8)
    }

    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 206: "Partial Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 400: "Bad Request"
        case 303: "See Other"
        case 307: "Temporary Redirect"
        case 308: "Permanent Redirect"
        case 404: "Not Found"
        case 416: "Range Not Satisfiable"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        default: "Status"
        }
    }
}
