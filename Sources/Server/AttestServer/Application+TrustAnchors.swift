import AttestCore
import AttestHTTP
import AttestObservability
import Foundation

extension Application {
    /// The primary trust anchor: Apple's App Attestation root, or the one `file` holds.
    static func trustAnchor(_ file: String?) throws(StartupError) -> TrustAnchor {
        guard let file else {
            do {
                return try TrustAnchor.appleAppAttestationRoot()
            } catch {
                throw StartupError(description: "cannot load the trust anchor: \(error)")
            }
        }
        guard let pem = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw StartupError(
                description: FileManager.default.fileExists(atPath: file)
                    ? "the trust anchor file \(file) exists but cannot be read by this user"
                    : "the trust anchor file \(file) does not exist")
        }
        do {
            return try TrustAnchor.custom(pem: pem)
        } catch {
            throw StartupError(description: "cannot load the trust anchor: \(error)")
        }
    }

    /// The root of `--additional-root`: a PEM certificate that is not the primary anchor, logged
    /// loudly with its fingerprint and expiry.
    static func additionalRoot(_ file: String, primary: TrustAnchor, logger: Logger) throws(StartupError) -> TrustAnchor {
        guard let pem = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw StartupError(
                description: FileManager.default.fileExists(atPath: file)
                    ? "the additional root file \(file) exists but cannot be read by this user"
                    : "the additional root file \(file) does not exist")
        }
        let root: TrustAnchor
        do {
            root = try TrustAnchor.custom(pem: pem)
        } catch {
            throw StartupError(description: "the additional root file \(file): \(error.reason)")
        }
        guard root.sha256Hex != primary.sha256Hex else {
            throw StartupError(description: "the additional root in \(file) is the primary trust anchor itself")
        }
        logger.log(
            .warning,
            "ADDITIONAL ROOT TRUSTED: attestations may also chain to this root; devices attested under it refresh only while it stays",
            [
                "trust_anchor.file": .string(file), "trust_anchor.sha256": .string(root.sha256Hex),
                "trust_anchor.not_after": .int(Int(root.notAfter)),
            ])
        return root
    }

    /// Each anchor as operators see it: the first is the primary, any other an additional root.
    static func trustedRoots(_ anchors: [TrustAnchor]) -> [TrustedRoot] {
        anchors.enumerated().map { index, anchor in
            TrustedRoot(
                sha256: anchor.sha256Hex, role: index == 0 ? "primary" : "additional", apple: anchor.isAppleRoot,
                subject: anchor.certificate.subject)
        }
    }

    /// What the metrics say of the anchors, fixed for the process's life so written once at start:
    /// `attestd_trust_anchor_info` (each root: Apple's or not, its subject), `attestd_insecure_test_mode`,
    /// and `attestd_trust_anchor_not_after_seconds` for each anchor, by fingerprint and role.
    static func anchorMetrics(_ anchors: [TrustAnchor], testMode: Bool) -> PrometheusText {
        var out = PrometheusText()
        out.family(
            "attestd_trust_anchor_info", .gauge,
            help: "1 for each root attestations may chain to: its fingerprint, role, whether it is Apple's, and its subject.")
        for root in trustedRoots(anchors) {
            out.sample(
                "attestd_trust_anchor_info",
                ["sha256": root.sha256, "role": root.role, "apple": root.apple ? "true" : "false", "subject": root.subject], 1)
        }
        out.family(
            "attestd_insecure_test_mode", .gauge,
            help: "1 when the node runs with --insecure-test-mode (its clock and challenges can be set by any local caller).")
        out.sample("attestd_insecure_test_mode", testMode ? 1 : 0)
        out.family(
            "attestd_trust_anchor_not_after_seconds", .gauge,
            help: "Unix time at which each attestation trust anchor expires: past the last one no new device can attest.")
        for (index, anchor) in anchors.enumerated() {
            out.sample(
                "attestd_trust_anchor_not_after_seconds",
                ["sha256": anchor.sha256Hex, "role": index == 0 ? "primary" : "additional"], anchor.notAfter)
        }
        return out
    }
}
