package import AttestCrypto
package import AttestErrors

/// The one error type of AttestCore: which check failed (a stable code), a sentence saying why,
/// and where it was thrown.
///
/// Equality compares codes only, so tests pin the check and not the wording. Every input the
/// verifier sees is attacker-supplied public data, so precise codes leak nothing secret; reasons
/// still never quote input bytes.
package typealias AttestError = CodedError<AttestErrorCode>

/// The closed set of checks that can fail. `identifier` is the stable wire spelling.
package enum AttestErrorCode: ErrorCode {
    // The generic CBOR decoder.
    case cborNotWellFormed
    case cborTooDeep
    case cborTrailingBytes
    case cborDuplicateKey
    case cborIndefiniteLength
    case cborTooLarge
    // Request values given beside the object.
    case keyIDLength
    case invalidPublicKey
    case invalidAppID
    case trustAnchor
    case objectEncoding
    case inputUnreadable
    // Object structure.
    case attestationStructure
    case assertionStructure
    case fmt
    case x5cShape
    case certificateEncoding
    case authDataTruncated
    case authDataExtensions
    case credentialKey
    case leafNotEndEntity
    // Apple's attestation checks.
    case chainInvalid(ChainFailure)
    case nonceExtension
    case nonceMismatch
    case keyIDMismatch
    case rpIDMismatch
    case counterNotZero
    case aaguid
    case environmentNotAllowed
    case credentialIDMismatch
    case credentialKeyMismatch
    // Apple's assertion checks.
    case signatureEncoding
    case signature
    case counterNotIncreasing
    // Receipt checks (Apple Root CA - G3 CMS; `ReceiptVerifier`).
    case receiptCMS
    case receiptTrailingBytes
    case receiptChainInvalid(ChainFailure)
    case receiptSignature
    case receiptSigner
    case receiptPayload
    case receiptField
    case receiptType
    case receiptAppID
    case receiptCertificate
    case receiptExpired

    /// The stable, documented spelling, e.g. `nonce_mismatch` or `chain_invalid:expired`.
    package var identifier: String {
        switch self {
        case .cborNotWellFormed: "cbor_not_well_formed"
        case .cborTooDeep: "cbor_too_deep"
        case .cborTrailingBytes: "cbor_trailing_bytes"
        case .cborDuplicateKey: "cbor_duplicate_key"
        case .cborIndefiniteLength: "cbor_indefinite_length"
        case .cborTooLarge: "cbor_too_large"
        case .keyIDLength: "key_id_length"
        case .invalidPublicKey: "invalid_public_key"
        case .invalidAppID: "invalid_app_id"
        case .trustAnchor: "trust_anchor"
        case .objectEncoding: "object_encoding"
        case .inputUnreadable: "input_unreadable"
        case .attestationStructure: "attestation_structure"
        case .assertionStructure: "assertion_structure"
        case .fmt: "fmt"
        case .x5cShape: "x5c_shape"
        case .certificateEncoding: "certificate_encoding"
        case .authDataTruncated: "auth_data_truncated"
        case .authDataExtensions: "auth_data_extensions"
        case .credentialKey: "credential_key"
        case .leafNotEndEntity: "leaf_not_end_entity"
        case .chainInvalid(let failure): "chain_invalid:\(failure.rawValue)"
        case .nonceExtension: "nonce_extension"
        case .nonceMismatch: "nonce_mismatch"
        case .keyIDMismatch: "key_id_mismatch"
        case .rpIDMismatch: "rp_id_mismatch"
        case .counterNotZero: "counter_not_zero"
        case .aaguid: "aaguid"
        case .environmentNotAllowed: "environment_not_allowed"
        case .credentialIDMismatch: "credential_id_mismatch"
        case .credentialKeyMismatch: "credential_key_mismatch"
        case .signatureEncoding: "signature_encoding"
        case .signature: "signature"
        case .counterNotIncreasing: "counter_not_increasing"
        case .receiptCMS: "receipt_cms"
        case .receiptTrailingBytes: "receipt_trailing_bytes"
        case .receiptChainInvalid(let failure): "receipt_chain_invalid:\(failure.rawValue)"
        case .receiptSignature: "receipt_signature"
        case .receiptSigner: "receipt_signer"
        case .receiptPayload: "receipt_payload"
        case .receiptField: "receipt_field"
        case .receiptType: "receipt_type"
        case .receiptAppID: "receipt_app_id"
        case .receiptCertificate: "receipt_certificate"
        case .receiptExpired: "receipt_expired"
        }
    }

    /// True for codes that say the object could not even be read (as opposed to a failed check).
    package var isMalformedInput: Bool {
        switch self {
        case .cborNotWellFormed, .cborTooDeep, .cborTrailingBytes, .cborDuplicateKey, .cborIndefiniteLength,
            .cborTooLarge, .keyIDLength, .invalidPublicKey, .invalidAppID, .objectEncoding:
            true
        default: false
        }
    }
}
