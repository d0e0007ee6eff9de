import AttestCore
import AttestObservability
import Foundation

extension Application {
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

    /// `attestd_trust_anchor_not_after_seconds` for each anchor, by fingerprint and role: fixed
    /// for the process's life, so written once at start.
    static func anchorMetrics(_ anchors: [TrustAnchor]) -> PrometheusText {
        var out = PrometheusText()
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
