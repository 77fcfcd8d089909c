import Foundation
import FuzzDriver
import Haul

/// Requests and results are `Codable` so that an embedder can store or send them; what it reads back may
/// have been written by anyone. Decoding must never crash, must refuse what Haul would refuse (a checksum or
/// URL that does not parse, a body that is not Base64, a stream descriptor), and what it accepts must encode
/// and decode back to the same value. The first byte picks the type, the rest is the JSON.
func fuzzCodable(_ data: UnsafePointer<UInt8>?, _ size: Int) -> Int32 {
    guard size > 0, let data else { return 0 }
    let json = Data(UnsafeBufferPointer(start: data + 1, count: size - 1))
    if data[0] & 1 == 0 {
        roundTrip(DownloadRequest.self, json)
    } else {
        roundTrip(DownloadResult.self, json)
    }
    return 0
}

private func roundTrip<Value: Codable & Equatable>(_ type: Value.Type, _ json: Data) {
    guard let value = try? JSONDecoder().decode(type, from: json) else { return }
    let encoded: Data
    do { encoded = try JSONEncoder().encode(value) } catch { preconditionFailure("a decoded \(type) does not encode: \(error)") }
    let again: Value
    do { again = try JSONDecoder().decode(type, from: encoded) } catch {
        preconditionFailure("\(String(decoding: encoded, as: UTF8.self)) does not decode: \(error)")
    }
    precondition(again == value, "\(String(decoding: encoded, as: UTF8.self)) reads back as another \(type)")
}

@_cdecl("FuzzCodable_main")
func main(_ argc: Int32, _ argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?) -> Int32 {
    haul_fuzz_run(argc, argv) { fuzzCodable($0, $1) }
}
