package import AttestCore
package import AttestStorage

/// The one error type of the token service: a stable code (what kind of refusal), a stable
/// reason (which check), and a sentence for logs.
///
/// The HTTP layer maps codes to statuses (docs/API.md). Reasons come from a fixed list: the
/// `AttestError` identifiers of the verifier plus the service's own. Equality compares code and
/// reason. Details never contain tokens, challenges or key material.
package struct ServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of refusal, stable on the wire.
    package enum Code: String, Sendable, Hashable, CaseIterable {
        case malformedRequest = "malformed_request"
        case invalidIntegration = "invalid_integration"
        case integrationNotFound = "integration_not_found"
        case integrationRevoked = "integration_revoked"
        case deviceBlocked = "device_blocked"
        case invalidChallenge = "invalid_challenge"
        case attestationRejected = "attestation_rejected"
        case assertionRejected = "assertion_rejected"
        case keyAlreadyRegistered = "key_already_registered"
        case invalidToken = "invalid_token"
        case rateLimited = "rate_limited"
        case storageUnavailable = "storage_unavailable"
    }

    package let code: Code
    /// Which check or field, e.g. `nonce_mismatch`, `challenge_used`, `key_id`.
    package let reason: String
    /// A sentence for logs and the problem document's `detail`.
    package let detail: String
    /// For `rateLimited` and `storageUnavailable`: seconds until a retry may succeed.
    package let retryAfter: Int?

    package init(_ code: Code, reason: String, _ detail: String, retryAfter: Int? = nil) {
        self.code = code
        self.reason = reason
        self.detail = detail
        self.retryAfter = retryAfter
    }

    package var description: String { "\(code.rawValue)/\(reason): \(detail)" }

    package static func == (lhs: ServiceError, rhs: ServiceError) -> Bool { lhs.code == rhs.code && lhs.reason == rhs.reason }
    package func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(reason)
    }

    /// A request field that is missing or malformed.
    package static func malformed(_ reason: String, _ detail: String) -> ServiceError {
        ServiceError(.malformedRequest, reason: reason, detail)
    }

    /// The storage could not serve the request now (busy past the timeout, disk full, I/O).
    package static func storage(_ error: StorageError) -> ServiceError {
        ServiceError(.storageUnavailable, reason: error.code.rawValue, "storage: \(error.reason)", retryAfter: 1)
    }

    /// A verifier refusal, as attestation or assertion rejection (or malformed input).
    package static func rejected(_ error: AttestError, attestation: Bool) -> ServiceError {
        if error.code.isMalformedInput { return .malformed(error.code.identifier, error.reason) }
        return ServiceError(attestation ? .attestationRejected : .assertionRejected, reason: error.code.identifier, error.reason)
    }
}

/// Runs a storage call, turning its errors into `storage_unavailable`.
func stored<T>(_ body: () throws(StorageError) -> T) throws(ServiceError) -> T {
    do {
        return try body()
    } catch {
        throw ServiceError.storage(error)
    }
}
