import AttestCore
import AttestCrypto
import AttestObservability
import AttestServer
import AttestStorage
import AttestTesting
import Foundation
import Testing

@Suite("Apple's next root beside the current one (--additional-root)")
struct AdditionalRootTests {
    @Test("--additional-root: /healthz and /metrics name both roots; a device attested under the added one gets a token")
    func additionalRoot() throws {
        let next = try SyntheticPKI(validAround: Int64(Date().timeIntervalSince1970), rootName: "Next App Attestation Root CA")
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("attestd-next-root-\(UUID().uuidString).pem")
        try next.root.pem.write(to: file, atomically: true, encoding: .utf8)
        defer { try? FileManager.default.removeItem(at: file) }
        let world = try HTTPWorld { $0.additionalRootFile = file.path }
        let client = try world.client()
        let health = world.json(try client.request("GET", "/healthz"))
        let primary = Hex.encode(world.pki.root.sha256Fingerprint)
        let added = Hex.encode(next.root.sha256Fingerprint)
        #expect(health["trust_anchor_sha256"] as? String == primary)
        #expect(health["additional_root_sha256"] as? String == added)
        let metrics = try client.request("GET", "/metrics").text
        #expect(metrics.contains(#"attestd_trust_anchor_not_after_seconds{sha256="\#(primary)",role="primary"} "#))
        let addedNotAfter = try #require(next.root.notAfter)
        #expect(metrics.contains(#"attestd_trust_anchor_not_after_seconds{sha256="\#(added)",role="additional"} \#(addedNotAfter)"#))
        #expect(world.sink.all.contains("ADDITIONAL ROOT TRUSTED") && world.sink.all.contains(added))
        // A device whose chain ends at the added root: a token, and its key records that root.
        let device = try SyntheticDevice()
        _ = try world.attest(client, device: device, pki: next)
        #expect(try world.app.store.device(keyID: device.keyID)?.trustAnchor == added)
    }

    @Test("--additional-root refuses to start on a missing file, a file that is no certificate, and the primary root itself")
    func additionalRootRefusals() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestd-roots-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let junk = directory.appendingPathComponent("junk.pem")
        try "not a certificate\n".write(to: junk, atomically: true, encoding: .utf8)
        let apple = directory.appendingPathComponent("apple.pem")
        try TrustAnchor.appleAppAttestationRoot().certificate.pem.write(to: apple, atomically: true, encoding: .utf8)
        for (file, reason) in [
            (directory.appendingPathComponent("missing.pem").path, "does not exist"), (junk.path, "does not parse"),
            (apple.path, "is the primary trust anchor itself"),
        ] {
            var configuration = ServerConfiguration()
            configuration.database = .sqlite(path: directory.appendingPathComponent("attestd.sqlite").path)
            configuration.additionalRootFile = file
            #expect(throws: Application.StartupError.self) {
                _ = try Application(configuration: configuration, version: "test", logger: Logger(sink: MemorySink()))
            }
            do {
                _ = try Application(configuration: configuration, version: "test", logger: Logger(sink: MemorySink()))
            } catch {
                #expect("\(error)".contains(reason), "\(error)")
            }
        }
    }
}
