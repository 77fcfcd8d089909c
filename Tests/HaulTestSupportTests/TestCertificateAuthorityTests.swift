import Foundation
import HaulTestSupport
import Testing

@Suite("TestCertificateAuthority")
struct TestCertificateAuthorityTests {
    private let openssl = "/usr/bin/openssl"

    private func verify(_ certificate: String, hostname: String? = nil, ip: String? = nil) throws -> ProcessResult {
        let ca = try TestCertificateAuthority.shared()
        var arguments = ["verify", "-CAfile", ca.caCertificatePath]
        if let hostname { arguments += ["-verify_hostname", hostname] }
        if let ip { arguments += ["-verify_ip", ip] }
        return try ChildProcess.run(openssl, arguments + [certificate])
    }

    @Test("the server certificate verifies against the CA for localhost, 127.0.0.1 and ::1")
    func serverCertificateVerifies() throws {
        let ca = try TestCertificateAuthority.shared()
        #expect(try verify(ca.serverCertificatePath, hostname: "localhost").exitStatus == 0)
        #expect(try verify(ca.serverCertificatePath, ip: "127.0.0.1").exitStatus == 0)
        #expect(try verify(ca.serverCertificatePath, ip: "::1").exitStatus == 0)
        #expect(FileManager.default.fileExists(atPath: ca.serverKeyPath))
        #expect(try ChildProcess.run(openssl, ["x509", "-checkend", "86400", "-noout", "-in", ca.serverCertificatePath]).exitStatus == 0)
    }

    @Test("the shared instance is generated once")
    func sharedIsCached() throws {
        #expect(try TestCertificateAuthority.shared() === TestCertificateAuthority.shared())
    }

    @Test("the self-signed certificate is not trusted by the CA")
    func selfSignedFails() throws {
        let ca = try TestCertificateAuthority.shared()
        let result = try verify(ca.selfSigned.certificatePath, hostname: "localhost")
        #expect(result.exitStatus != 0)
        #expect(result.outputText.contains("self-signed") || result.errorText.contains("self-signed"))
    }

    @Test("the wrong-hostname certificate is CA-signed but fails hostname verification")
    func wrongHostnameFails() throws {
        let ca = try TestCertificateAuthority.shared()
        #expect(try verify(ca.wrongHostname.certificatePath).exitStatus == 0)
        #expect(try verify(ca.wrongHostname.certificatePath, hostname: "wrong.example").exitStatus == 0)
        #expect(try verify(ca.wrongHostname.certificatePath, hostname: "localhost").exitStatus != 0)
        #expect(try verify(ca.wrongHostname.certificatePath, ip: "127.0.0.1").exitStatus != 0)
    }

    @Test("the expired certificate has expired and fails verification for that reason")
    func expiredFails() throws {
        let ca = try TestCertificateAuthority.shared()
        let checkend = try ChildProcess.run(openssl, ["x509", "-checkend", "0", "-noout", "-in", ca.expired.certificatePath])
        #expect(checkend.exitStatus == 1)
        let result = try verify(ca.expired.certificatePath, hostname: "localhost")
        #expect(result.exitStatus != 0)
        #expect((result.outputText + result.errorText).contains("expired"))
    }
}
