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
                                      checksum: checksum, ifChangedOnServer: .restart, discardsPartialDownload: true)
        request.headers = [(name: "X-Token", value: "a b"), (name: "X-Token", value: "second")]
        return request
    }

    static var fullResult: DownloadResult {
        DownloadResult(path: "out/big.iso", bytes: 1 << 32, duration: .milliseconds(1234) + .nanoseconds(5),
                       finalURL: try! HTTPURL("https://u:p%40w@cdn.example:8443/big.iso?sig=1"),
                       entityTag: EntityTag("W/\"v\u{E9}1\""), lastModified: HTTPDate(secondsSinceEpoch: 784_111_777),
                       redirects: 2, connections: 8, bytesRequested: (1 << 32) + 7, retries: 3)
    }

    func json(_ value: some Encodable) throws -> Data { try JSONEncoder().encode(value) }

    /// The encoded object's keys, to compare with the type's stored properties.
    func keys(of data: Data) throws -> Set<String> {
        Set(try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any]).keys)
    }

    func storedProperties(of value: Any) -> Set<String> { Set(Mirror(reflecting: value).children.compactMap(\.label)) }

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

    @Test func missingKeysTakeTheSafeDefaults() throws {
        let decoded = try JSONDecoder().decode(DownloadRequest.self, from: Data(#"{"url": "http://example.org/f", "destination": {"file": "f"}}"#.utf8))
        #expect(decoded == DownloadRequest(url: "http://example.org/f", destination: .file("f")))
        #expect(!decoded.replacesExisting && !decoded.discardsPartialDownload && decoded.ifChangedOnServer == .fail && decoded.checksum == nil)
    }

    @Test(arguments: [
        #"{"url": "u", "destination": {"file": "f"}, "checksum": "sha256=abc"}"#,                       // too short: never "no checksum"
        #"{"url": "u", "destination": {"file": "f"}, "checksum": "sha265=\#(String(repeating: "0", count: 64))"}"#,
        #"{"url": "u", "destination": {"file": "f"}, "ifChangedOnServer": "ignore"}"#,
        #"{"url": "u", "destination": {"stream": 1}}"#,                                                 // a descriptor of another process
        #"{"url": "u", "destination": {"file": "f", "directory": "d"}}"#,
        #"{"url": "u", "destination": {}}"#,
        #"{"destination": {"file": "f"}}"#,
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
            { $0.headers[1].value = "other" },
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

    @Test func aResultWithoutValidatorsRoundTrips() throws {
        var result = Self.fullResult
        result.entityTag = nil
        result.lastModified = nil
        #expect(try JSONDecoder().decode(DownloadResult.self, from: json(result)) == result)
    }

    @Test func resultsDifferingInAnyPropertyAreUnequal() throws {
        let changes: [(inout DownloadResult) -> Void] = [
            { $0.path += "x" }, { $0.bytes += 1 }, { $0.duration += .nanoseconds(1) },
            { $0.finalURL = try! HTTPURL("https://cdn.example:8443/big.iso?sig=1") }, { $0.entityTag = EntityTag("\"v\u{E9}1\"") },
            { $0.lastModified = HTTPDate(secondsSinceEpoch: 0) }, { $0.redirects += 1 }, { $0.connections += 1 },
            { $0.bytesRequested += 1 }, { $0.retries += 1 },
        ]
        #expect(changes.count == storedProperties(of: Self.fullResult).count)
        for (index, change) in changes.enumerated() {
            var changed = Self.fullResult
            change(&changed)
            #expect(changed != Self.fullResult, "change \(index)")
        }
    }
}
