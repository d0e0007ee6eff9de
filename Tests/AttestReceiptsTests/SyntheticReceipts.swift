import AttestCore
import AttestCrypto
import AttestTesting
import Foundation

/// RECEIPT receipts signed by a synthetic receipt PKI (`ReceiptPKI`).
struct SyntheticReceipts {
    let pki: ReceiptPKI

    init(time: Int64) throws { pki = try ReceiptPKI(time: time) }

    var verifier: ReceiptVerifier { ReceiptVerifier(anchor: .custom(pki.root)) }

    /// The credential certificate the receipts name unless told otherwise (any DER stands in).
    var credentialCertificate: [UInt8] { pki.intermediate.derBytes }

    /// A signed RECEIPT receipt for `appID` created at `created`, carrying `risk`.
    /// Field 3, the credential certificate it names, is `certificate` (by default one fixed DER,
    /// `credentialCertificate`).
    func receipt(appID: String, created: Int64, risk: Int, type: String = "RECEIPT", certificate: [UInt8]? = nil) throws -> [UInt8] {
        let fields: [(Int, [UInt8])] = [
            (17, Array(String(risk).utf8)), (6, Array(type.utf8)), (2, Array(appID.utf8)), (3, certificate ?? credentialCertificate),
            (4, [UInt8](repeating: 0xAB, count: 32)), (5, [UInt8](repeating: 0x11, count: 40)), (7, Array("sandbox".utf8)),
            (12, Array(Self.iso(created).utf8)), (19, Array(Self.iso(created + 86_400).utf8)),
            (21, Array(Self.iso(created + 90 * 86_400).utf8)),
        ]
        let content = Self.tlv(0x31, fields.flatMap { Self.tlv(0x30, Self.integer($0.0) + Self.integer(1) + Self.tlv(0x04, $0.1)) })
        return try pki.sign(content)
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
