package import AttestCrypto

/// The kind of receipt: the one inside an attestation, or one Apple's fraud-metric endpoint returned.
package enum ReceiptType: String, Sendable, Hashable, CaseIterable {
    case attest = "ATTEST"
    case receipt = "RECEIPT"
}

/// Everything one receipt is verified against. Time and identity come in as values.
package struct ReceiptInput: Sendable {
    /// The receipt: CMS SignedData, BER or DER.
    package var receipt: [UInt8]
    /// The attested App ID; field 2 must equal it exactly.
    package var appID: AppID
    /// DER of the attestation's credential certificate; field 3 must be byte-identical. Nil skips the
    /// comparison (an operator's `attestctl verify receipt` without `--certificate`).
    package var certificate: [UInt8]?
    /// The type field 6 must have (`.attest` at attestation); nil accepts either.
    package var expectedType: ReceiptType?
    /// Verification time, Unix seconds: the signer's path is validated at it, and it must be before
    /// the receipt's expiration time.
    package var time: Int64

    package init(receipt: [UInt8], appID: AppID, certificate: [UInt8]?, expectedType: ReceiptType?, time: Int64) {
        (self.receipt, self.appID, self.certificate, self.expectedType, self.time) = (receipt, appID, certificate, expectedType, time)
    }
}

/// A receipt that passed every check. Only `ReceiptVerifier` can make one.
package struct VerifiedReceipt: Sendable {
    package let type: ReceiptType
    /// Field 2, equal to the App ID verified against.
    package let appID: AppID
    /// Field 7: `sandbox` is development; `production` or absent is production.
    package let environment: AppAttestEnvironment
    /// Field 12, Unix seconds (fraction dropped).
    package let createdAt: Int64
    /// Field 19, the earliest time to ask Apple for a refreshed receipt (not a start of validity);
    /// absent in `ATTEST` receipts.
    package let notBefore: Int64?
    /// Field 21, Unix seconds: the receipt is refused from this second on.
    package let expiresAt: Int64
    /// Field 17, Apple's approximate count of keys attested for this app on this device in 30 days;
    /// absent in `ATTEST` receipts.
    package let riskMetric: Int?
    /// SHA-256 of field 3 (the attestation's credential certificate, DER).
    package let certificateSHA256: [UInt8]
    /// Field 5, opaque to attestd; nil when absent.
    package let token: [UInt8]?
    /// How Apple signed it; `.contentDespiteSignedAttributes` marks the early non-conformant form.
    package let signatureForm: CMSSignatureForm
}

/// Verifies Apple App Attest receipts: the CMS signature and its path to Apple Root CA - G3, the
/// signer's receipt-signing marker, the payload, and the receipt's binding to the attested key.
///
/// Each check is a named function in `ReceiptChecks` throwing `AttestError` with its own
/// `receipt_*` code (docs/VERIFICATION.md lists them). No I/O, no clock: time comes in.
package final class ReceiptVerifier: Sendable {
    /// The anchor the signer must chain to: Apple Root CA - G3 in production.
    package let anchor: TrustAnchor

    /// Receipts larger than this are refused before parsing (real ones are about 3.8 KB).
    package static let maximumSize = 64 * 1024

    /// A verifier trusting `anchor` alone (a synthetic root in tests).
    package init(anchor: TrustAnchor) {
        self.anchor = anchor
    }

    /// The production verifier: the embedded, fingerprint-pinned Apple Root CA - G3.
    package static func apple() throws(AttestError) -> ReceiptVerifier {
        ReceiptVerifier(anchor: try TrustAnchor.appleRootCAG3())
    }

    /// Runs every check in order; the first failure is thrown.
    package func verify(_ input: ReceiptInput) throws(AttestError) -> VerifiedReceipt {
        let (content, signer, form) = try ReceiptChecks.signature(input.receipt, anchor: anchor, at: input.time)
        try ReceiptChecks.signer(signer)
        return try ReceiptPayload(content: content).verified(against: input, form: form)
    }

    /// At attestation: the receipt inside `attestation` must be an `ATTEST` receipt for its App ID
    /// and its credential certificate, valid at `time`.
    package func verifyAttestationReceipt(of attestation: VerifiedAttestation, at time: Int64) throws(AttestError) -> VerifiedReceipt {
        try verify(
            ReceiptInput(
                receipt: attestation.receipt, appID: attestation.appID, certificate: attestation.credentialCertificate,
                expectedType: .attest, time: time))
    }
}

/// Each receipt check, named after what it proves.
enum ReceiptChecks {
    /// Apple's extension on the receipt-signing certificate ("Application Attestation Fraud Receipt
    /// Signing"). Why: Apple Root CA - G3 also anchors certificates whose keys Apple does not hold
    /// (developers' Apple Pay payment-processing certificates chain to it), so a path to G3 alone
    /// would accept a receipt any developer signed.
    static let signerMarkerOID = "1.2.840.113635.100.12.15"

    /// The CMS object parses with nothing after it, its one signer's signature verifies over the
    /// content, and the signer chains to the anchor at `time` (the object's certificates are
    /// untrusted helpers). Returns the signed content and the signer.
    static func signature(
        _ receipt: [UInt8], anchor: TrustAnchor, at time: Int64
    ) throws(AttestError) -> (content: [UInt8], signer: Certificate, form: CMSSignatureForm) {
        guard receipt.count <= ReceiptVerifier.maximumSize else {
            throw AttestError(.receiptCMS, "the receipt is \(receipt.count) bytes; at most \(ReceiptVerifier.maximumSize) are accepted")
        }
        let signedData: CMSSignedData
        do {
            signedData = try CMSSignedData(berEncoded: receipt)
        } catch {
            if error.code == .cmsTrailingBytes { throw AttestError(.receiptTrailingBytes, error.reason) }
            throw AttestError(.receiptCMS, "the receipt is not a CMS object: \(error.reason)")
        }
        switch signedData.verify(root: anchor.certificate, at: time) {
        case .rejected(.shape(let reason)): throw AttestError(.receiptCMS, reason)
        case .rejected(.chain(let failure, let detail)): throw AttestError(.receiptChainInvalid(failure), detail)
        case .rejected(.signature(let detail)): throw AttestError(.receiptSignature, "the receipt's signature does not verify: \(detail)")
        case .verified(let content, let signer, let form): return (content, signer, form)
        }
    }

    /// The signer certificate carries Apple's receipt-signing extension (see `signerMarkerOID`).
    static func signer(_ signer: Certificate) throws(AttestError) {
        guard signer.extensions(oid: signerMarkerOID).count == 1 else {
            throw AttestError(.receiptSigner, "the signer certificate lacks Apple's receipt-signing extension \(signerMarkerOID)")
        }
    }

    /// Field 6 is `ATTEST` or `RECEIPT`, and the expected one when a type is expected.
    static func type(_ payload: ReceiptPayload, expected: ReceiptType?) throws(AttestError) -> ReceiptType {
        let text = try payload.required(.type)
        guard let type = ReceiptType(rawValue: String(decoding: text, as: UTF8.self)) else {
            throw AttestError(.receiptType, "field 6 is neither ATTEST nor RECEIPT")
        }
        if let expected, type != expected {
            throw AttestError(.receiptType, "the receipt is \(type.rawValue), not \(expected.rawValue)")
        }
        return type
    }

    /// Field 2 is exactly the attested App ID's bytes (no trimming, no case folding).
    static func appID(_ payload: ReceiptPayload, appID: AppID) throws(AttestError) {
        guard try payload.required(.appID) == Array(appID.description.utf8) else {
            throw AttestError(.receiptAppID, "field 2 is not the App ID \(appID.description)")
        }
    }

    /// Field 3 is byte-identical to the attestation's credential certificate, when one is given.
    static func certificate(_ certificate: [UInt8], expected: [UInt8]?) throws(AttestError) {
        guard let expected else { return }
        guard certificate == expected else {
            throw AttestError(.receiptCertificate, "field 3 is not the attestation's credential certificate")
        }
    }

    /// Field 7: `sandbox` is development, `production` or absent is production, anything else is refused.
    static func environment(_ payload: ReceiptPayload) throws(AttestError) -> AppAttestEnvironment {
        switch payload.values[.environment].map({ String(decoding: $0, as: UTF8.self) }) {
        case nil, "production": return .production
        case "sandbox": return .development
        default: throw AttestError(.receiptField, "field 7 is neither sandbox nor production")
        }
    }

    /// Fields 12 (required), 19 (optional) and 21 (required) are ISO 8601 UTC times.
    static func times(_ payload: ReceiptPayload) throws(AttestError) -> (createdAt: Int64, notBefore: Int64?, expiresAt: Int64) {
        func time(_ field: ReceiptField, _ value: [UInt8]) throws(AttestError) -> Int64 {
            guard let seconds = ReceiptTime.unixSeconds(value) else {
                throw AttestError(.receiptField, "field \(field.rawValue) is not an ISO 8601 UTC time")
            }
            return seconds
        }
        let createdAt = try time(.creationTime, payload.required(.creationTime))
        let expiresAt = try time(.expirationTime, payload.required(.expirationTime))
        var notBefore: Int64?
        if let value = payload.values[.notBefore] { notBefore = try time(.notBefore, value) }
        return (createdAt, notBefore, expiresAt)
    }

    /// The verification time is before the expiration time (field 21). Field 19 is deliberately not
    /// checked: it is when Apple will refresh the receipt, not when it starts to count.
    static func notExpired(expiresAt: Int64, at time: Int64) throws(AttestError) {
        guard time < expiresAt else {
            throw AttestError(.receiptExpired, "the receipt expired at \(expiresAt), not after the verification time \(time)")
        }
    }

    /// Field 17, when present: the decimal number as ASCII digits (not a DER INTEGER), 1 to 9 digits.
    static func riskMetric(_ payload: ReceiptPayload) throws(AttestError) -> Int? {
        guard let text = payload.values[.riskMetric] else { return nil }
        guard (1...9).contains(text.count), text.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else {
            throw AttestError(.receiptField, "field 17 is not a decimal number")
        }
        return text.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }
}
