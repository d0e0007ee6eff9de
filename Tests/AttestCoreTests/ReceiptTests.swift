import AttestCore
import AttestCrypto
import AttestTesting
import Foundation
import Testing

/// Shared by the receipt suites: the production verifier and every recorded receipt.
enum Receipts {
    static let apple: ReceiptVerifier? = try? ReceiptVerifier.apple()
    static let recorded: [RecordedReceipt] = (try? Fixtures.recordedReceipts()) ?? []
    /// One genuine BER `RECEIPT` receipt (risk metric 2) and one genuine definite-length DER one.
    static let refreshed = recorded.first { $0.id == "veehaitch-yaml/ios-14.2.yaml#1" }
    static let attest = recorded.first { $0.id == "recorded/uebelack_production_attestation" }

    static func input(_ recorded: RecordedReceipt, time: Int64? = nil, certificate: [UInt8]? = nil) throws -> ReceiptInput {
        ReceiptInput(
            receipt: recorded.receipt, appID: try AppID(recorded.appID), certificate: certificate ?? recorded.certificate,
            expectedType: nil, time: time ?? recorded.recordedAt)
    }

    static func signatureByte(_ bytes: [UInt8]) -> Int? { RecordedReceipt.signatureByteIndex(bytes) }
}

extension RecordedReceipt: CustomTestStringConvertible {
    package var testDescription: String { id }
}

func expectReceiptRefusal(
    _ code: AttestError.Code, _ verifier: ReceiptVerifier?, _ input: ReceiptInput, sourceLocation: SourceLocation = #_sourceLocation
) throws {
    let verifier = try #require(verifier, sourceLocation: sourceLocation)
    #expect(throws: AttestError(code, ""), sourceLocation: sourceLocation) { try verifier.verify(input) }
}

@Suite("Receipts recorded from real devices")
struct RecordedReceiptTests {
    @Test("the fixtures hold 42 receipts: 29 ATTEST and 13 RECEIPT, BER and definite-length DER")
    func inventory() throws {
        #expect(Receipts.recorded.count == 42)
        let verifier = try #require(Receipts.apple)
        let types = try Receipts.recorded.map { try verifier.verify(Receipts.input($0)).type }
        #expect(types.filter { $0 == .attest }.count == 29)
        #expect(types.filter { $0 == .receipt }.count == 13)
        #expect(Receipts.recorded.contains { $0.receipt.starts(with: [0x30, 0x80]) })
        #expect(Receipts.recorded.contains { $0.receipt.starts(with: [0x30, 0x82]) })
    }

    @Test("the embedded Apple Root CA - G3 is the pinned one and equals the fixture")
    func pinnedRoot() throws {
        let verifier = try #require(Receipts.apple)
        #expect(verifier.anchor.isAppleRoot)
        #expect(verifier.anchor.certificate.sha256Fingerprint == TrustAnchor.appleRootCAG3Fingerprint)
        let pem = String(decoding: try Fixtures.data("appattest/roots/apple_root_ca_g3.pem"), as: UTF8.self)
        #expect(try Certificate(pemEncoded: pem).derBytes == verifier.anchor.certificate.derBytes)
    }

    @Test("verifies at its recorded time, with its App ID and its attestation's certificate", arguments: Receipts.recorded)
    func verifies(_ recorded: RecordedReceipt) throws {
        let verified = try #require(Receipts.apple).verify(Receipts.input(recorded))
        #expect(verified.appID.description == recorded.appID)
        #expect(verified.certificateSHA256 == Digest.sha256(recorded.certificate))
        #expect(verified.signatureForm == .content)
        #expect(verified.expiresAt == verified.createdAt + 90 * 86_400)
        switch verified.type {
        case .attest:
            #expect(verified.notBefore == nil)
            #expect(verified.riskMetric == nil)
        case .receipt:
            #expect(verified.notBefore == verified.createdAt + 86_400)
            #expect(verified.riskMetric != nil)
        }
    }

    @Test("agrees with the recording's own decoding of the receipt", arguments: Receipts.recorded.filter { $0.properties != nil })
    func matchesRecording(_ recorded: RecordedReceipt) throws {
        let properties = try #require(recorded.properties)
        let verified = try #require(Receipts.apple).verify(Receipts.input(recorded))
        #expect(verified.type.rawValue == properties.type)
        #expect(verified.environment == (properties.environment == "sandbox" ? .development : .production))
        #expect(verified.createdAt == Fixtures.unixSeconds(properties.creationTime))
        #expect(verified.expiresAt == Fixtures.unixSeconds(properties.expirationTime))
        #expect(verified.notBefore == properties.notBefore.flatMap(Fixtures.unixSeconds))
        #expect(verified.riskMetric == properties.riskMetric)
        // Field 5 holds the token as base64 text, which the recording shows decoded.
        #expect(verified.token == properties.tokenB64.map { Array($0.utf8) })
    }

    @Test("every complete recorded attestation's receipt is its ATTEST receipt (verifyAttestationReceipt)")
    func attestationReceipts() throws {
        let verifier = try #require(Recorded.verifier)
        let receipts = try #require(Receipts.apple)
        for recorded in Recorded.completeAttestations where recorded.object != nil {
            guard recorded.hashedClientData != nil || recorded.clientDataHash != nil else { continue }
            let time = try #require(recorded.verifyAtUnix)
            let attestation = try verifier.verify(Recorded.input(recorded))
            let receipt = try receipts.verifyAttestationReceipt(of: attestation, at: time)
            #expect(receipt.type == .attest)
            #expect(receipt.appID == attestation.appID)
            #expect(receipt.certificateSHA256 == Digest.sha256(attestation.credentialCertificate))
        }
    }

    @Test(
        "is accepted until its expiration (or its signer's notAfter when earlier), refused from its expiration second on",
        arguments: Receipts.recorded)
    func expiration(_ recorded: RecordedReceipt) throws {
        let verifier = try #require(Receipts.apple)
        let expiresAt = try verifier.verify(Receipts.input(recorded)).expiresAt
        // Some signer certificates end before the receipts they signed (8 of the recorded ones);
        // OpenSSL treats a certificate as expired from the second named in its notAfter.
        let signerNotAfter = try #require(try CMSSignedData(berEncoded: recorded.receipt).certificates().compactMap(\.notAfter).min())
        _ = try verifier.verify(Receipts.input(recorded, time: min(expiresAt, signerNotAfter) - 1))
        let code: AttestError.Code = expiresAt < signerNotAfter ? .receiptExpired : .receiptChainInvalid(.expired)
        try expectReceiptRefusal(code, verifier, Receipts.input(recorded, time: expiresAt))
    }

    @Test("8 recorded receipts outlive their signer certificate; the others are refused by their own expiration")
    func expirationIsTheLimit() throws {
        let limitedBySigner = try Receipts.recorded.filter { recorded in
            let expiresAt = try #require(Receipts.apple).verify(Receipts.input(recorded)).expiresAt
            let signerNotAfter = try #require(try CMSSignedData(berEncoded: recorded.receipt).certificates().compactMap(\.notAfter).min())
            return signerNotAfter < expiresAt
        }
        #expect(limitedBySigner.count == 8)
    }

    @Test("is refused today: its signer's certificate has expired", arguments: Receipts.recorded)
    func expiredToday(_ recorded: RecordedReceipt) throws {
        try expectReceiptRefusal(.receiptChainInvalid(.expired), Receipts.apple, Receipts.input(recorded, time: 1_800_000_000))
    }

    @Test("is never refused before field 19 (the refresh time): a RECEIPT verifies at its creation second")
    func notBeforeIsNotValidity() throws {
        let recorded = try #require(Receipts.refreshed)
        let verifier = try #require(Receipts.apple)
        let verified = try verifier.verify(Receipts.input(recorded))
        let notBefore = try #require(verified.notBefore)
        #expect(verified.createdAt < notBefore)
        _ = try verifier.verify(Receipts.input(recorded, time: verified.createdAt))
    }
}

@Suite("Receipt rejections on genuine receipts (each changes one thing)")
struct GenuineReceiptRejectionTests {
    @Test("a flipped byte of the signature", arguments: [Receipts.refreshed, Receipts.attest])
    func signatureByte(_ recorded: RecordedReceipt?) throws {
        let recorded = try #require(recorded)
        var bytes = recorded.receipt
        let index = try #require(Receipts.signatureByte(bytes))
        bytes[index] ^= 0x01
        var input = try Receipts.input(recorded)
        input.receipt = bytes
        try expectReceiptRefusal(.receiptSignature, Receipts.apple, input)
    }

    @Test("a changed byte of the signed content (the App ID's last letter)")
    func contentByte() throws {
        let recorded = try #require(Receipts.attest)
        var bytes = recorded.receipt
        let appID = Array(recorded.appID.utf8)
        let start = try #require((0...(bytes.count - appID.count)).first { Array(bytes[$0..<($0 + appID.count)]) == appID })
        bytes[start + appID.count - 1] ^= 0x20
        var input = try Receipts.input(recorded)
        input.receipt = bytes
        try expectReceiptRefusal(.receiptSignature, Receipts.apple, input)
    }

    @Test("another App ID than field 2, even one differing only in case")
    func appID() throws {
        let recorded = try #require(Receipts.attest)
        var input = try Receipts.input(recorded)
        input.appID = try AppID("V8H6LQ9448.io.uebelacker.AppAttestExamplf")
        try expectReceiptRefusal(.receiptAppID, Receipts.apple, input)
        input.appID = try AppID("V8H6LQ9448.io.uebelacker.appattestexample")
        try expectReceiptRefusal(.receiptAppID, Receipts.apple, input)
    }

    @Test("another attestation's certificate than field 3")
    func certificate() throws {
        let recorded = try #require(Receipts.attest)
        let other = try #require(Receipts.recorded.first { $0.certificate != recorded.certificate })
        try expectReceiptRefusal(.receiptCertificate, Receipts.apple, Receipts.input(recorded, certificate: other.certificate))
    }

    @Test("a RECEIPT where an ATTEST receipt is expected (at attestation)")
    func type() throws {
        var input = try Receipts.input(try #require(Receipts.refreshed))
        input.expectedType = .attest
        try expectReceiptRefusal(.receiptType, Receipts.apple, input)
        input.expectedType = .receipt
        _ = try #require(Receipts.apple).verify(input)
    }

    @Test("a byte after the CMS object, BER or DER", arguments: [Receipts.refreshed, Receipts.attest])
    func trailingBytes(_ recorded: RecordedReceipt?) throws {
        var input = try Receipts.input(try #require(recorded))
        input.receipt += [0x00]
        try expectReceiptRefusal(.receiptTrailingBytes, Receipts.apple, input)
        input.receipt += [0x00, 0x00, 0x00]
        try expectReceiptRefusal(.receiptTrailingBytes, Receipts.apple, input)
    }

    @Test(
        "bytes that are not a CMS object",
        arguments: [[], [0x30, 0x80], [0xA3, 0x63, 0x66, 0x6D, 0x74], Array("MIAGCSqGSIb3DQEHAqCAMIAC".utf8)] as [[UInt8]])
    func notCMS(_ bytes: [UInt8]) throws {
        var input = try Receipts.input(try #require(Receipts.attest))
        input.receipt = bytes
        try expectReceiptRefusal(.receiptCMS, Receipts.apple, input)
    }

    @Test("a receipt over 64 KiB, before it is parsed")
    func oversized() throws {
        var input = try Receipts.input(try #require(Receipts.attest))
        input.receipt += [UInt8](repeating: 0, count: ReceiptVerifier.maximumSize)
        try expectReceiptRefusal(.receiptCMS, Receipts.apple, input)
    }

    @Test("the genuine content re-signed by a synthetic CA (with Apple's names and marker) does not chain to G3")
    func resignedElsewhere() throws {
        let pki = try ReceiptPKI(time: 1_707_340_136)
        let recorded = try #require(Receipts.attest)
        let content = try #require(try ReceiptPKI.content(of: recorded.receipt))
        var input = try Receipts.input(recorded)
        input.receipt = try pki.sign(content, certificates: [pki.intermediate])
        try expectReceiptRefusal(.receiptChainInvalid(.unableToGetIssuer), Receipts.apple, input)
        // The same object verifies against its own root: only the anchor differs.
        _ = try ReceiptVerifier(anchor: .custom(pki.root)).verify(input)
        // With a self-made root named "Apple Root CA - G3" in the object, the path ends at an untrusted root.
        input.receipt = try pki.sign(content, certificates: [pki.intermediate, pki.root])
        try expectReceiptRefusal(.receiptChainInvalid(.untrustedRoot), Receipts.apple, input)
    }
}

extension ReceiptPKI {
    /// The signed content of a genuine receipt, read by the verifier against its own anchor
    /// (`CMSSignedData` over the genuine chain at the receipt's recorded time).
    static func content(of receipt: [UInt8]) throws -> [UInt8]? {
        let root = try #require(Receipts.apple).anchor.certificate
        let signedData = try CMSSignedData(berEncoded: receipt)
        for recorded in Receipts.recorded where recorded.receipt == receipt {
            if case .verified(let content, _, _) = signedData.verify(root: root, at: recorded.recordedAt) { return content }
        }
        return nil
    }
}
