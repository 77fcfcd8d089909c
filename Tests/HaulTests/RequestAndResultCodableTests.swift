import Foundation
import HaulHTTP
import Testing
@testable import Haul

/// Requests and results compare and encode by value, every stored property included.
@Suite struct RequestAndResultCodableTests {
    static let checksum = try! Checksum("sha256=" + String(repeating: "0f", count: 32))

    /// A request whose every property differs from the default.
    static var fullRequest: DownloadRequest {
        var request = DownloadRequest(url: "https://me:secret@example.org/big.iso", mirrors: ["https://mirror.example/big.iso"],
                                      destination: .file("out/big.iso"), createsDirectories: true, replacesExisting: true,
                                      checksum: checksum, ifChangedOnServer: .restart, discardsPartialDownload: true,
                                      headers: [(name: "X-Token", value: "a b"), (name: "X-Token", value: "second")],
                                      credentials: DownloadRequest.Credentials(user: "alice", password: "p:w \u{E9}"))
        request.onlyIfChanged = true
        request.setsRemoteTime = true
        request.pieceHashes = try! PieceHashes(length: 1 << 20, algorithm: .sha1, digests: [String(repeating: "ab", count: 20), String(repeating: "CD", count: 20)])
        request.modifiedSince = HTTPDate(secondsSinceEpoch: 1_630_497_600)
        request.expectedSize = 1 << 32
        request.followsMetalink = true
        return request
    }

    static var fullResult: DownloadResult {
        var result = DownloadResult(path: "out/big.iso", bytes: 1 << 32, duration: .milliseconds(1234) + .nanoseconds(5),
                       finalURL: try! HTTPURL("https://u:p%40w@cdn.example:8443/big.iso?sig=1"),
                       entityTag: EntityTag("W/\"v\u{E9}1\""), lastModified: HTTPDate(secondsSinceEpoch: 784_111_777),
                       redirects: 2, connections: 8, bytesRequested: (1 << 32) + 7, retries: 3,
                       body: [0, 1, 2, 0xFB, 0xFF, 0x3E], status: 206,
                       headers: [(name: "Content-Type", value: "application/json; charset=utf-8"), (name: "X-A", value: "1"), (name: "x-a", value: "2")])
        result.upToDate = true
        result.isMetalink = true
        return result
    }

    func json(_ value: some Encodable) throws -> Data { try JSONEncoder().encode(value) }

    /// The encoded object's keys, to compare with the type's stored properties.
    func keys(of data: Data) throws -> Set<String> {
        Set(try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any]).keys)
    }

    /// The stored properties' names; a result's `headers` are stored as `headerStorage` (the response's fields
    /// are turned into strings only when read), which is named here by the property it stores. A request's
    /// `parsedURLCache` (its `url` parsed, a cache) and `listedAbsentPath` (a hint from its caller's listing of
    /// the directory) are not part of the value and are left out.
    func storedProperties(of value: Any) -> Set<String> {
        Set(Mirror(reflecting: value).children.compactMap(\.label).filter { $0 != "parsedURLCache" && $0 != "listedAbsentPath" }
            .map { $0 == "headerStorage" ? "headers" : $0 })
    }

    // MARK: Requests

    @Test func aRequestRoundTripsWithEveryProperty() throws {
        let request = Self.fullRequest
        let data = try json(request)
        let decoded = try JSONDecoder().decode(DownloadRequest.self, from: data)
        #expect(decoded == request, "\(String(decoding: data, as: UTF8.self))")
        #expect(decoded.headers.map(\.name) == ["X-Token", "X-Token"] && decoded.headers.map(\.value) == ["a b", "second"])
        // A property added to DownloadRequest but not to its Codable conformance fails here.
        #expect(try keys(of: data) == storedProperties(of: request))
        #expect(Set(DownloadRequest.CodingKeys.allCases.map(\.rawValue)) == storedProperties(of: request))
    }

    @Test func aDirectoryDestinationRoundTrips() throws {
        let request = DownloadRequest(url: "http://example.org/", destination: .directory("downloads"))
        let data = try json(request)
        #expect(try JSONDecoder().decode(DownloadRequest.self, from: data) == request)
        #expect(String(decoding: data, as: UTF8.self).contains(#""destination":{"directory":"downloads"}"#))
    }

    @Test func aMemoryDestinationRoundTrips() throws {
        let request = DownloadRequest(url: "http://example.org/config.json", destination: .memory(limit: 1 << 20))
        let data = try json(request)
        #expect(try JSONDecoder().decode(DownloadRequest.self, from: data) == request)
        #expect(String(decoding: data, as: UTF8.self).contains(#""destination":{"memory":1048576}"#))
        #expect(request != DownloadRequest(url: "http://example.org/config.json", destination: .memory(limit: 1 << 10)))
    }

    @Test func missingKeysTakeTheSafeDefaults() throws {
        let decoded = try JSONDecoder().decode(DownloadRequest.self, from: Data(#"{"url": "http://example.org/f", "destination": {"file": "f"}}"#.utf8))
        #expect(decoded == DownloadRequest(url: "http://example.org/f", destination: .file("f")))
        #expect(!decoded.replacesExisting && !decoded.discardsPartialDownload && decoded.ifChangedOnServer == .fail && decoded.checksum == nil)
        #expect(decoded.headers.isEmpty && decoded.credentials == nil)
    }

    @Test(arguments: [
        #"{"url": "u", "destination": {"file": "f"}, "checksum": "sha256=abc"}"#,                       // too short: never "no checksum"
        #"{"url": "u", "destination": {"file": "f"}, "checksum": "sha265=\#(String(repeating: "0", count: 64))"}"#,
        #"{"url": "u", "destination": {"file": "f"}, "ifChangedOnServer": "ignore"}"#,
        #"{"url": "u", "destination": {"stream": 1}}"#,                                                 // a descriptor of another process
        #"{"url": "u", "destination": {"memory": -1}}"#,
        #"{"url": "u", "destination": {"memory": "1M"}}"#,
        #"{"url": "u", "destination": {"file": "f", "directory": "d"}}"#,
        #"{"url": "u", "destination": {}}"#,
        #"{"destination": {"file": "f"}}"#,
        #"{"url": "u", "destination": {"file": "f"}, "pieceHashes": {"length": 0, "algorithm": "md5", "digests": ["\#(String(repeating: "0", count: 32))"]}}"#,
        #"{"url": "u", "destination": {"file": "f"}, "pieceHashes": {"length": 4, "algorithm": "md5", "digests": []}}"#,
        #"{"url": "u", "destination": {"file": "f"}, "pieceHashes": {"length": 4, "algorithm": "md5", "digests": ["abc"]}}"#,
        #"{"url": "u", "destination": {"file": "f"}, "pieceHashes": {"length": 4, "algorithm": "sha-384", "digests": ["\#(String(repeating: "0", count: 96))"]}}"#,
    ])
    func aMalformedRequestIsADecodingError(json: String) {
        #expect(throws: DecodingError.self) { _ = try JSONDecoder().decode(DownloadRequest.self, from: Data(json.utf8)) }
    }

    @Test func aStreamRequestCannotBeEncoded() {
        #expect(throws: EncodingError.self) {
            _ = try JSONEncoder().encode(DownloadRequest(url: "http://example.org/", destination: .stream(.standardOutput)))
        }
    }

    @Test func requestsDifferingInAnyPropertyAreUnequal() {
        let changes: [(inout DownloadRequest) -> Void] = [
            { $0.url += "x" }, { $0.mirrors = [] }, { $0.destination = .directory("out") }, { $0.createsDirectories = false },
            { $0.replacesExisting = false }, { $0.checksum = nil }, { $0.ifChangedOnServer = .fail }, { $0.discardsPartialDownload = false },
            { $0.headers[1].value = "other" }, { $0.credentials?.password = "other" },
            { $0.onlyIfChanged = false }, { $0.setsRemoteTime = false }, { $0.pieceHashes = nil },
            { $0.modifiedSince = nil }, { $0.expectedSize = 7 }, { $0.followsMetalink = false },
        ]
        // One change per stored property: a new property needs its own line here, and in `==`.
        #expect(changes.count == storedProperties(of: Self.fullRequest).count)
        for (index, change) in changes.enumerated() {
            var changed = Self.fullRequest
            change(&changed)
            #expect(changed != Self.fullRequest, "change \(index)")
        }
        #expect(Self.fullRequest == Self.fullRequest)
    }

    // MARK: Results

    @Test func aResultRoundTripsWithEveryProperty() throws {
        let result = Self.fullResult
        let data = try json(result)
        let decoded = try JSONDecoder().decode(DownloadResult.self, from: data)
        #expect(decoded == result, "\(String(decoding: data, as: UTF8.self))")
        #expect(decoded.finalURL.userInfo?.password == "p@w")
        #expect(try keys(of: data) == storedProperties(of: result))
        #expect(Set(DownloadResult.CodingKeys.allCases.map(\.rawValue)) == storedProperties(of: result))
    }

    @Test func aResultWithoutValidatorsOrBodyRoundTrips() throws {
        var result = Self.fullResult
        result.entityTag = nil
        result.lastModified = nil
        result.body = nil
        let data = try json(result)
        #expect(try JSONDecoder().decode(DownloadResult.self, from: data) == result)
        #expect(try !keys(of: data).contains("body"), "a file's result has no body")
    }

    /// A result encoded before results carried the response decodes with none.
    @Test func aResultWithoutTheResponseDecodes() throws {
        var result = Self.fullResult
        result.status = nil
        result.headers = []
        var object = try #require(try JSONSerialization.jsonObject(with: json(result)) as? [String: Any])
        object["status"] = nil
        object["headers"] = nil
        let decoded = try JSONDecoder().decode(DownloadResult.self, from: JSONSerialization.data(withJSONObject: object))
        #expect(decoded == result && decoded.contentType == nil && !decoded.hasMediaType("application/json"))
    }

    @Test func theContentTypeIsTheFirstContentTypeField() {
        var result = Self.fullResult
        #expect(result.contentType == "application/json; charset=utf-8")
        #expect(result.hasMediaType("application/json") && result.hasMediaType("Application/JSON") && !result.hasMediaType("application/js"))
        result.headers = [(name: "content-TYPE", value: " text/html ;q=1"), (name: "Content-Type", value: "application/json")]
        #expect(result.contentType == " text/html ;q=1" && result.hasMediaType("text/html") && !result.hasMediaType("application/json"))
    }

    /// A body is standard Base64 with padding, whatever its length modulo 3, and only that decodes.
    @Test func aBodyIsBase64() throws {
        var result = Self.fullResult
        for (body, text) in [([UInt8](), ""), ([0x66], "Zg=="), ([0x66, 0x6F], "Zm8="), ([0x66, 0x6F, 0x6F], "Zm9v"),
                             ([0, 1, 2, 0xFB, 0xFF, 0x3E], "AAEC+/8+")] {
            result.body = body
            let data = try json(result)
            let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
            #expect(object["body"] as? String == text, "\(body)")
            #expect(try JSONDecoder().decode(DownloadResult.self, from: data).body == body)
        }
        let encoded = try #require(try JSONSerialization.jsonObject(with: json(Self.fullResult)) as? [String: Any])
        for bad in ["Zg", "Zg=", "Z===", "Zh==", "Zm9=", "Zm 9", "Zm9v=", "=Zm9"] {
            var object = encoded
            object["body"] = bad
            let data = try JSONSerialization.data(withJSONObject: object)
            #expect(throws: DecodingError.self, "\(bad)") { _ = try JSONDecoder().decode(DownloadResult.self, from: data) }
        }
    }

    /// A finished download's result keeps its response and makes `headers` from it when they are read.
    @Test func aResultFromAResponseHasItsFieldsAsHeadersUntilTheyAreSet() throws {
        var parser = ResponseParser(requestWasHead: true)
        let text = Array("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nX-A: caf\u{E9}\r\nx-a: 2\r\n\r\n".unicodeScalars.map { UInt8($0.value) })
        let event = try text.withUnsafeBytes { try parser.parse($0).event }
        guard case .head(let head) = event else { Issue.record("no head: \(event)"); return }
        var result = DownloadResult(path: "/f", bytes: 0, duration: .zero, finalURL: try HTTPURL("http://h/f"), entityTag: nil,
                                    lastModified: nil, redirects: 0, connections: 1, bytesRequested: 0, retries: 0,
                                    body: nil, response: head)
        #expect(result.status == 200)
        #expect(result.headers.map { "\($0.name)=\($0.value)" } == ["Content-Type=application/json", "X-A=caf\u{E9}", "x-a=2"])
        #expect(result.hasMediaType("application/json"))
        result.headers = [(name: "A", value: "b")]
        #expect(result.headers.map { "\($0.name)=\($0.value)" } == ["A=b"] && result.contentType == nil)
        let none = DownloadResult(path: "/f", bytes: 0, duration: .zero, finalURL: try HTTPURL("http://h/f"), entityTag: nil,
                                  lastModified: nil, redirects: 0, connections: 1, bytesRequested: 0, retries: 0,
                                  body: nil, response: nil)
        #expect(none.status == nil && none.headers.isEmpty)
    }

    @Test func resultsDifferingInAnyPropertyAreUnequal() throws {
        let changes: [(inout DownloadResult) -> Void] = [
            { $0.path += "x" }, { $0.bytes += 1 }, { $0.duration += .nanoseconds(1) },
            { $0.finalURL = try! HTTPURL("https://cdn.example:8443/big.iso?sig=1") }, { $0.entityTag = EntityTag("\"v\u{E9}1\"") },
            { $0.lastModified = HTTPDate(secondsSinceEpoch: 0) }, { $0.redirects += 1 }, { $0.connections += 1 },
            { $0.bytesRequested += 1 }, { $0.retries += 1 }, { $0.body?.append(0) }, { $0.status = 200 },
            { $0.headers[2].name = "X-A" }, { $0.upToDate = false }, { $0.isMetalink = false },
        ]
        #expect(changes.count == storedProperties(of: Self.fullResult).count)
        for (index, change) in changes.enumerated() {
            var changed = Self.fullResult
            change(&changed)
            #expect(changed != Self.fullResult, "change \(index)")
        }
    }
}

/// The fields added for Metalink sizes and curl's `-z DATE`: older encodings (without them) still read, and
/// what is written reads back.
@Suite struct RequestSizeAndDateCodingTests {
    @Test func anOlderEncodingReadsWithTheDefaults() throws {
        let json = #"{"url": "http://a.test/f", "destination": {"file": "f"}, "onlyIfChanged": true}"#
        let request = try JSONDecoder().decode(DownloadRequest.self, from: Data(json.utf8))
        #expect(request.expectedSize == nil && request.modifiedSince == nil && !request.followsMetalink && request.onlyIfChanged)
    }

    @Test func aRequestWithoutTheNewFieldsEncodesAsBefore() throws {
        let data = try JSONEncoder().encode(DownloadRequest(url: "http://a.test/f", destination: .file("f")))
        let object = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(object["expectedSize"] == nil && object["modifiedSince"] == nil && object["followsMetalink"] == nil)
    }

    @Test func theDateIsAnIMFFixdateAndReadsBack() throws {
        var request = DownloadRequest(url: "http://a.test/f", destination: .file("f"))
        request.modifiedSince = HTTPDate("Wed, 01 Sep 2021 12:00:00 GMT")
        request.expectedSize = 0
        let data = try JSONEncoder().encode(request)
        #expect(String(decoding: data, as: UTF8.self).contains(#""modifiedSince":"Wed, 01 Sep 2021 12:00:00 GMT""#))
        #expect(try JSONDecoder().decode(DownloadRequest.self, from: data) == request)
    }

    @Test(arguments: [
        #"{"url": "u", "destination": {"file": "f"}, "expectedSize": -1}"#,
        #"{"url": "u", "destination": {"file": "f"}, "expectedSize": "10"}"#,
        #"{"url": "u", "destination": {"file": "f"}, "modifiedSince": "yesterday"}"#,
        #"{"url": "u", "destination": {"file": "f"}, "modifiedSince": 1630497600}"#,
    ])
    func aBadSizeOrDateIsADecodingError(json: String) {
        #expect(throws: DecodingError.self) { _ = try JSONDecoder().decode(DownloadRequest.self, from: Data(json.utf8)) }
    }

    @Test func aMetalinkFileGivesItsSize() throws {
        let metalink = try Metalink(parsing: Array("""
            <metalink xmlns="urn:ietf:params:xml:ns:metalink"><file name="a.bin"><size>12345</size>\
            <url>http://a.test/a.bin</url></file></metalink>
            """.utf8))
        let request = try DownloadRequest(metalink: metalink.files[0], directory: "out")
        #expect(request.expectedSize == 12345 && request.checksum == nil && request.destination == .file("out/a.bin"))
    }

    /// `-N` into a directory: the name comes from the URL before the request, so the file can be asked about.
    @Test func aConditionalDownloadIntoADirectoryIsNamedFromItsURL() {
        var request = DownloadRequest(url: "http://a.test/dir/pkg.tar.gz?x=1", destination: .directory("out/"))
        #expect(DownloadPreparation.namedBeforeAsking(request).destination == .directory("out/"), "without -N: the server names it")
        request.onlyIfChanged = true
        #expect(DownloadPreparation.namedBeforeAsking(request).destination == .file("out/pkg.tar.gz"))
        request.destination = .directory("out")
        #expect(DownloadPreparation.namedBeforeAsking(request).destination == .file("out/pkg.tar.gz"))
        request.destination = .file("x")
        #expect(DownloadPreparation.namedBeforeAsking(request).destination == .file("x"))
    }
}
