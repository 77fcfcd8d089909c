import Foundation
import Testing
import HaulTestSupport
@testable import Haul

/// Each broken certificate is refused with a clear reason, and accepted only with `insecure`.
@Suite(.serialized) struct TLSFailureTests {
    enum Variant: String, CaseIterable, Sendable {
        case selfSigned, wrongHostname, expired
    }

    func server(_ variant: Variant) throws -> NginxServer {
        let ca = try TestCertificateAuthority.shared()
        var configuration = NginxConfiguration()
        configuration.certificate = switch variant {
        case .selfSigned: ca.selfSigned
        case .wrongHostname: ca.wrongHostname
        case .expired: ca.expired
        }
        let nginx = try NginxServer(configuration: configuration)
        try TestFiles.create(at: nginx.dataDirectory + "/f.bin", size: 1000)
        return nginx
    }

    @Test(arguments: Variant.allCases)
    func brokenCertificateIsRejectedWithItsReason(_ variant: Variant) async throws {
        let nginx = try server(variant)
        defer { nginx.stop() }
        let directory = try scratchDirectory()
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var options = DownloadOptions(synchronizesToDisk: false)
        options.tls.caFile = try TestCertificateAuthority.shared().caCertificatePath
        let expected = switch variant {
        case .selfSigned: "self-signed certificate"
        case .wrongHostname: "hostname mismatch"
        case .expired: "certificate has expired"
        }
        await #expect {
            _ = try await HaulClient(options: options).download(nginx.url("/f.bin", tls: true), to: directory + "/f")
        } throws: { error in
            let text = String(describing: error)
            guard case .tls? = (error as? HaulError)?.reason else { return false }
            return text.contains(expected) && text.contains("localhost:\(nginx.httpsPort!)")
        }
        #expect(!FileManager.default.fileExists(atPath: directory + "/f"))

        options.tls.insecure = true
        let result = try await HaulClient(options: options).download(nginx.url("/f.bin", tls: true), to: directory + "/f")
        #expect(result.bytes == 1000)
    }
}
