package import AttestErrors

/// The one error type of AttestCrypto: a closed code, a sentence for humans, and where it was thrown.
///
/// Two errors are equal when their codes are equal, so tests pin the code and not the wording.
/// The reason never contains key material or input bytes, only the failed operation and
/// OpenSSL's own error strings.
package typealias CryptoError = CodedError<CryptoErrorCode>

/// The stable, closed set of failure kinds.
package enum CryptoErrorCode: String, ErrorCode {
    case invalidPublicKey = "invalid_public_key"
    case invalidPrivateKey = "invalid_private_key"
    case invalidCertificate = "invalid_certificate"
    case invalidSignature = "invalid_signature"
    case invalidCMS = "invalid_cms"
    case cmsTrailingBytes = "cms_trailing_bytes"
    case unsupportedCurve = "unsupported_curve"
    case randomFailure = "random_failure"
    case invalidSealingKey = "invalid_sealing_key"
    case sealedBoxRefused = "sealed_box_refused"
    case internalFailure = "internal_failure"
}
