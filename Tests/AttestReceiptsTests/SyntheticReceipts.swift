import AttestCore
import AttestCrypto
import Foundation

/// A receipt PKI shaped like Apple's (root, "Apple Application Integration CA 5 - G1", a signer with
/// the receipt-signing marker), made at test time, and the RECEIPT receipts it signs.
struct SyntheticReceipts {
    let rootKey: PrivateKey
    let root: Certificate
    let intermediateKey: PrivateKey
    let intermediate: Certificate
    let signerKey: PrivateKey
    let signer: Certificate

    init(time: Int64) throws {
        rootKey = try PrivateKey.generate(.p384)
        root = try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: "Apple Root CA - G3", organization: "Apple Inc.", notBefore: time - 86_400 * 365,
                notAfter: time + 86_400 * 365, basicConstraints: "critical,CA:TRUE", keyUsage: "critical,keyCertSign,cRLSign",
                digest: .sha384),
            subjectKey: try rootKey.publicKey, issuer: nil, issuerKey: rootKey)
        intermediateKey = try PrivateKey.generate(.p256)
        intermediate = try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: "Apple Application Integration CA 5 - G1", organization: "Apple Inc.", serial: 2,
                notBefore: time - 86_400 * 30, notAfter: time + 86_400 * 300, basicConstraints: "critical,CA:TRUE,pathlen:0",
                keyUsage: "critical,keyCertSign,cRLSign", digest: .sha384),
            subjectKey: try intermediateKey.publicKey, issuer: root, issuerKey: rootKey)
        signerKey = try PrivateKey.generate(.p256)
        signer = try CertificateBuilder.issue(
            CertificateTemplate(
                commonName: "Application Attestation Fraud Receipt Signing", organization: "Apple Inc.", serial: 3,
                notBefore: time - 86_400 * 10, notAfter: time + 86_400 * 200, basicConstraints: "critical,CA:FALSE",
                keyUsage: "critical,digitalSignature",
                extraExtensions: [.init(oid: "1.2.840.113635.100.12.15", isCritical: false, value: [0x05, 0x00])]),
            subjectKey: try signerKey.publicKey, issuer: intermediate, issuerKey: intermediateKey)
    }

    var verifier: ReceiptVerifier { ReceiptVerifier(anchor: .custom(root)) }

    /// A signed RECEIPT receipt for `appID` created at `created`, carrying `risk`.
    func receipt(appID: String, created: Int64, risk: Int, type: String = "RECEIPT") throws -> [UInt8] {
        let fields: [(Int, [UInt8])] = [
            (17, Array(String(risk).utf8)), (6, Array(type.utf8)), (2, Array(appID.utf8)), (3, intermediate.derBytes),
            (4, [UInt8](repeating: 0xAB, count: 32)), (5, [UInt8](repeating: 0x11, count: 40)), (7, Array("sandbox".utf8)),
            (12, Array(Self.iso(created).utf8)), (19, Array(Self.iso(created + 86_400).utf8)),
            (21, Array(Self.iso(created + 90 * 86_400).utf8)),
        ]
        let content = Self.tlv(0x31, fields.flatMap { Self.tlv(0x30, Self.integer($0.0) + Self.integer(1) + Self.tlv(0x04, $0.1)) })
        return try CMSBuilder.sign(content: content, signer: signer, key: signerKey, certificates: [intermediate, root], form: .content)
    }

    static func tlv(_ tag: UInt8, _ body: [UInt8]) -> [UInt8] {
        if body.count < 0x80 { return [tag, UInt8(body.count)] + body }
        if body.count <= 0xFF { return [tag, 0x81, UInt8(body.count)] + body }
        return [tag, 0x82, UInt8(body.count >> 8), UInt8(body.count & 0xFF)] + body
    }

    static func integer(_ value: Int) -> [UInt8] { tlv(0x02, [UInt8(value)]) }

    static func iso(_ seconds: Int64) -> String {
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: Date(timeIntervalSince1970: TimeInterval(seconds) + 0.25))
    }
}
