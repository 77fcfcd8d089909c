import Haul
import HaulHTTP
import HaulIO

/// A ``TaskFailure`` as a JSON object in the log and the protocol (`docs/sessions.md`, "Failures"):
/// `reason` (the `HaulError.Reason` case's name), `message`, `class`, `code`, `url`, `attempts`, and the
/// reason's details as plain fields.
enum FailureCodec {
    /// The longest text a failure's field may hold: a log record's payload limit.
    static let textLimit = SessionLogCodec.maximumPayload

    static func name(of reason: HaulError.Reason) -> String {
        switch reason {
        case .invalidURL: "invalidURL"
        case .invalidRequest: "invalidRequest"
        case .network: "network"
        case .tls: "tls"
        case .tlsSetup: "tlsSetup"
        case .malformedResponse: "malformedResponse"
        case .truncatedTLS: "truncatedTLS"
        case .httpStatus: "httpStatus"
        case .redirect: "redirect"
        case .timedOut: "timedOut"
        case .incomplete: "incomplete"
        case .disk: "disk"
        case .invalidDestination: "invalidDestination"
        case .destinationExists: "destinationExists"
        case .changedOnServer: "changedOnServer"
        case .wrongContentRange: "wrongContentRange"
        case .faultyResponse: "faultyResponse"
        case .belowSpeedLimit: "belowSpeedLimit"
        case .retryAfterTooLong: "retryAfterTooLong"
        case .outputClosed: "outputClosed"
        case .clientShutDown: "clientShutDown"
        case .destinationBusy: "destinationBusy"
        case .mirrorMismatch: "mirrorMismatch"
        case .sizeMismatch: "sizeMismatch"
        case .checksumMismatch: "checksumMismatch"
        case .digestMismatch: "digestMismatch"
        case .insufficientSpace: "insufficientSpace"
        case .responseTooLarge: "responseTooLarge"
        case .journal: "journal"
        case .partialDownloadMismatch: "partialDownloadMismatch"
        case .workingFileReplaced: "workingFileReplaced"
        case .cancelled: "cancelled"
        case .checkpointFailed: "checkpointFailed"
        case .unexpected: "unexpected"
        }
    }

    static func json(_ failure: TaskFailure) -> JSONValue {
        var object = JSONObject()
        object["reason"] = .string(failure.recordedReason)
        object["message"] = .string(failure.message)
        object["class"] = .string(failure.failureClass.rawValue)
        object["code"] = .int(failure.exitCode)
        if let url = failure.error.url { object["url"] = .string(url) }
        object["attempts"] = .int(failure.error.attempts)
        // A failure read back as `unexpected` from a reason the log does not detail keeps its recorded name
        // and no details.
        guard failure.recordedReason == name(of: failure.error.reason) else { return .object(object) }
        func put(_ key: String, _ value: String) { object[key] = .string(value) }
        func put(_ key: String, _ value: Int64) { object[key] = .int(value) }
        func put(_ key: String, _ error: SystemError) {
            object[key + "Call"] = .string(error.call)
            object[key + "Errno"] = .int(error.errno)
        }
        switch failure.error.reason {
        case .invalidURL(let error): put("input", error.input)
        case .invalidRequest(let error):
            switch error.reason {
            case .invalidHeaderName(let name): put("problem", "invalidHeaderName"); put("name", name)
            case .invalidHeaderValue(let name): put("problem", "invalidHeaderValue"); put("name", name)
            case .reservedHeader(let name): put("problem", "reservedHeader"); put("name", name)
            case .weakEntityTagInIfRange: put("problem", "weakEntityTagInIfRange")
            case .ifRangeWithoutRange: put("problem", "ifRangeWithoutRange")
            }
        case .network(let error), .tls(let error):
            put("kind", connectionKindName(error.kind))
            put("host", error.host)
            put("port", Int64(error.port))
            if !error.detail.isEmpty { put("detail", error.detail) }
            if let system = error.systemError { put("system", system) }
        case .tlsSetup(let error): put("detail", error.reason)
        case .truncatedTLS(let server, let bytes): put("server", server); put("bytes", bytes)
        case .httpStatus(let status, let text, let url): put("status", Int64(status)); put("statusText", text); put("at", url)
        case .timedOut(let after, let url, let bytes): put("afterMs", milliseconds(after)); put("at", url); put("bytes", bytes)
        case .incomplete(let url, let expected, let received): put("at", url); put("expected", expected); put("received", received)
        case .disk(let path, let error): put("path", path); put("system", error)
        case .invalidDestination(let detail): put("detail", detail)
        case .destinationExists(let path): put("path", path)
        case .workingFileReplaced(let path, let destination, let replaced):
            put("path", path); put("destination", destination); put("replaced", replaced ? 1 : 0)
        case .changedOnServer(let url, let detail), .faultyResponse(let url, let detail), .mirrorMismatch(let url, let detail):
            put("at", url); put("detail", detail)
        case .wrongContentRange(let url, let requested, let received): put("at", url); put("requested", requested); put("received", received)
        case .sizeMismatch(let url, let expected, let served): put("at", url); put("expected", expected); put("served", served)
        case .belowSpeedLimit(let url, let limit): put("at", url); put("rate", limit.bytesPerSecond); put("seconds", Int64(limit.seconds))
        case .retryAfterTooLong(let url, let status, let asked, let limit):
            put("at", url); put("status", Int64(status)); put("askedMs", milliseconds(asked)); put("limitMs", milliseconds(limit))
        case .destinationBusy(let path, let holder): put("path", path); if let holder { put("holder", Int64(holder)) }
        case .checksumMismatch(let path, let expected, let actual): put("path", path); put("expected", expected.description); put("actual", actual)
        case .digestMismatch(let mismatch):
            put("path", mismatch.path); put("algorithm", mismatch.algorithm); put("expected", mismatch.expected); put("actual", mismatch.actual)
            switch mismatch.subject {
            case .piece(let index, let range, let mirrors, let why):
                put("piece", Int64(index)); put("start", range.lowerBound); put("end", range.upperBound)
                put("mirrors", mirrors.joined(separator: " ")); put("detail", why)
            case .representationDigest(let url): put("at", url)
            }
        case .insufficientSpace(let path, let needed, let available): put("path", path); put("needed", needed); put("available", available)
        case .responseTooLarge(let url, let limit, let length): put("at", url); put("limit", Int64(limit)); if let length { put("length", length) }
        case .partialDownloadMismatch(let path, let detail): put("path", path); put("detail", detail)
        case .unexpected(let detail): put("detail", detail)
        case .outputClosed, .clientShutDown, .cancelled, .malformedResponse, .redirect, .journal, .checkpointFailed: break
        }
        return .object(object)
    }

    static func decode(_ value: JSONValue, path: String) throws(SchemaError) -> TaskFailure {
        var reader = try FieldReader(value, path: path)
        let reasonName = try reader.string("reason", maximumBytes: 64)
        // Texts as long as a record may hold: whatever the daemon wrote must read back.
        let message = try reader.string("message", maximumBytes: textLimit)
        let className = try reader.string("class", maximumBytes: 32)
        let code = Int32(try reader.integer("code", in: 0...255))
        let url = try reader.optionalString("url", maximumBytes: textLimit)
        let attempts = Int(try reader.integer("attempts", in: 1...Int64(Int32.max)))
        let reason = try decodeReason(reasonName, message: message, reader: &reader)
        try reader.finish()
        return TaskFailure(error: HaulError(reason, url: url, attempts: attempts),
                           failureClass: FailureClass(rawValue: className) ?? .unexpected, exitCode: code,
                           message: message, recordedReason: reasonName)
    }

    private static func decodeReason(_ name: String, message: String, reader: inout FieldReader) throws(SchemaError) -> HaulError.Reason {
        let size: ClosedRange<Int64> = 0...Int64.max
        func text(_ key: String) throws(SchemaError) -> String { try reader.string(key, maximumBytes: textLimit) }
        func number(_ key: String) throws(SchemaError) -> Int64 { try reader.integer(key, in: size) }
        func system(_ key: String) throws(SchemaError) -> SystemError? {
            guard let call = try reader.optionalString(key + "Call", maximumBytes: 64) else { return nil }
            return SystemError(call: call, errno: Int32(try reader.integer(key + "Errno", in: 0...4095)))
        }
        func status(_ key: String) throws(SchemaError) -> Int { Int(try reader.integer(key, in: 0...Int64(Int32.max))) }
        switch name {
        case "invalidURL":
            let input = try text("input")
            if case .failure(let error) = Result(catching: { () throws(URLParseError) in _ = try HTTPURL(input) }) {
                return .invalidURL(error)
            }
        case "invalidRequest":
            let problem = try text("problem")
            let headerName = try reader.optionalString("name", maximumBytes: textLimit) ?? ""
            switch problem {
            case "invalidHeaderName": return .invalidRequest(RequestHeadError(.invalidHeaderName(headerName)))
            case "invalidHeaderValue": return .invalidRequest(RequestHeadError(.invalidHeaderValue(name: headerName)))
            case "reservedHeader": return .invalidRequest(RequestHeadError(.reservedHeader(headerName)))
            case "weakEntityTagInIfRange": return .invalidRequest(RequestHeadError(.weakEntityTagInIfRange))
            case "ifRangeWithoutRange": return .invalidRequest(RequestHeadError(.ifRangeWithoutRange))
            default: break
            }
        case "network", "tls":
            let kindName = try text("kind")
            let host = try text("host")
            let port = UInt16(try reader.integer("port", in: 0...65535))
            let detail = try reader.optionalString("detail", maximumBytes: textLimit) ?? ""
            let systemError = try system("system")
            if let kind = connectionKind(named: kindName) {
                let error = ConnectionError(kind: kind, host: host, port: port, systemError: systemError, detail: detail)
                return name == "tls" ? .tls(error) : .network(error)
            }
        case "tlsSetup": return .tlsSetup(TLSSetupError(recordedReason: try text("detail")))
        case "truncatedTLS": return .truncatedTLS(server: try text("server"), bytesReceived: try number("bytes"))
        case "httpStatus": return .httpStatus(status: try status("status"), reason: try text("statusText"), url: try text("at"))
        case "timedOut":
            return .timedOut(after: .milliseconds(try number("afterMs")), url: try text("at"), bytesReceived: try number("bytes"))
        case "incomplete": return .incomplete(url: try text("at"), expected: try number("expected"), received: try number("received"))
        case "disk":
            let path = try text("path")
            return .disk(path: path, try system("system") ?? SystemError(call: "unknown", errno: 0))
        case "invalidDestination": return .invalidDestination(try text("detail"))
        case "destinationExists": return .destinationExists(path: try text("path"))
        case "workingFileReplaced":
            return .workingFileReplaced(path: try text("path"), destination: try text("destination"),
                                        replaced: try reader.integer("replaced", in: 0...1) == 1)
        case "changedOnServer": return .changedOnServer(url: try text("at"), detail: try text("detail"))
        case "faultyResponse": return .faultyResponse(url: try text("at"), detail: try text("detail"))
        case "mirrorMismatch": return .mirrorMismatch(url: try text("at"), detail: try text("detail"))
        case "sizeMismatch": return .sizeMismatch(url: try text("at"), expected: try number("expected"), served: try number("served"))
        case "wrongContentRange":
            return .wrongContentRange(url: try text("at"), requested: try text("requested"), received: try text("received"))
        case "belowSpeedLimit":
            let limit = LowSpeedLimit(bytesPerSecond: try number("rate"), seconds: Int(try reader.integer("seconds", in: 0...Int64(Int32.max))))
            return .belowSpeedLimit(url: try text("at"), limit: limit)
        case "retryAfterTooLong":
            return .retryAfterTooLong(url: try text("at"), status: try status("status"), asked: .milliseconds(try number("askedMs")),
                                      limit: .milliseconds(try number("limitMs")))
        case "outputClosed": return .outputClosed
        case "clientShutDown": return .clientShutDown
        case "destinationBusy":
            return .destinationBusy(path: try text("path"), holder: try reader.optionalInteger("holder", in: 0...Int64(Int32.max)).map(Int32.init))
        case "checksumMismatch":
            let path = try text("path"), expected = try text("expected"), actual = try text("actual")
            if let checksum = try? Checksum(expected) { return .checksumMismatch(path: path, expected: checksum, actual: actual) }
        case "digestMismatch":
            let path = try text("path"), algorithm = try text("algorithm"), expected = try text("expected"), actual = try text("actual")
            let subject: DigestMismatch.Subject
            if let index = try reader.optionalInteger("piece", in: 0...Int64(Int32.max)) {
                let start = try number("start"), end = try number("end")
                guard start <= end else { break }
                let mirrors = try text("mirrors")
                subject = .piece(index: Int(index), range: start..<end, mirrors: mirrors.split(separator: " ").map(String.init), why: try text("detail"))
            } else {
                subject = .representationDigest(url: try text("at"))
            }
            return .digestMismatch(DigestMismatch(subject, path: path, algorithm: algorithm, expected: expected, actual: actual))
        case "insufficientSpace":
            return .insufficientSpace(path: try text("path"), needed: try number("needed"), available: try number("available"))
        case "responseTooLarge":
            return .responseTooLarge(url: try text("at"), limit: Int(try number("limit")), length: try reader.optionalInteger("length", in: size))
        case "partialDownloadMismatch": return .partialDownloadMismatch(path: try text("path"), detail: try text("detail"))
        case "cancelled": return .cancelled
        case "unexpected": return .unexpected(try reader.optionalString("detail", maximumBytes: textLimit) ?? message)
        default: break
        }
        // A reason this log does not detail (or a newer Haul's): its message stands for it.
        return .unexpected(message)
    }

    private static let connectionKinds: [(ConnectionError.Kind, String)] = [
        (.resolutionFailed, "resolutionFailed"), (.connectFailed, "connectFailed"), (.connectTimedOut, "connectTimedOut"),
        (.tlsHandshakeFailed, "tlsHandshakeFailed"), (.tlsHandshakeTimedOut, "tlsHandshakeTimedOut"),
        (.idleTimedOut, "idleTimedOut"), (.headTimedOut, "headTimedOut"), (.tlsFailure, "tlsFailure"),
        (.ioFailure, "ioFailure"), (.closed, "closed"), (.proxyFailed, "proxyFailed"),
    ]

    static func connectionKindName(_ kind: ConnectionError.Kind) -> String {
        connectionKinds.first { $0.0 == kind }?.1 ?? "closed"
    }

    static func connectionKind(named name: String) -> ConnectionError.Kind? {
        connectionKinds.first { $0.1 == name }?.0
    }

    private static func milliseconds(_ duration: Duration) -> Int64 {
        let (seconds, attoseconds) = duration.components
        return seconds * 1000 + attoseconds / 1_000_000_000_000_000
    }
}
