package import AttestCore
package import AttestStorage

/// The one error type of the token service, in the shape of every error of this code base: a
/// closed `code` (what kind of refusal), a closed `subcode` (which check or field), and a human
/// `reason` sentence.
///
/// The HTTP layer writes them as problem+json `code`, `reason` and `detail` (docs/API.md: the
/// wire calls the sub-code `reason`, and the sentence `detail`). Every wire spelling is written
/// once, in `Code.rawValue` and `Subcode.identifier`. Equality compares code and sub-code.
/// Reasons never contain tokens, challenges or key material.
package struct ServiceError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The kinds of refusal, stable on the wire.
    package enum Code: String, Sendable, Hashable, CaseIterable {
        case malformedRequest = "malformed_request"
        case invalidIntegration = "invalid_integration"
        case integrationNotFound = "integration_not_found"
        case integrationRevoked = "integration_revoked"
        /// The integration is suspended while an incident is investigated (reversible).
        case integrationSuspended = "integration_suspended"
        case deviceBlocked = "device_blocked"
        case invalidChallenge = "invalid_challenge"
        case attestationRejected = "attestation_rejected"
        case assertionRejected = "assertion_rejected"
        case keyAlreadyRegistered = "key_already_registered"
        /// The device's latest fraud-risk metric exceeds what its integration allows.
        case riskMetricExceeded = "risk_metric_exceeded"
        /// The integration requires a valid receipt and the device's did not verify.
        case receiptRequired = "receipt_required"
        case rateLimited = "rate_limited"
        case storageUnavailable = "storage_unavailable"
        /// attestd itself failed (the random source): not the caller's fault, not the storage's.
        case internalError = "internal_error"
        /// The admin key's role may not take this action (the admin API).
        case forbiddenRole = "forbidden_role"
        /// No device with this key ID in the admin key's workspace (the admin API).
        case deviceNotFound = "device_not_found"
        /// No live token with this value in the admin key's workspace (the admin API).
        case tokenNotFound = "token_not_found"
        /// No admin key with this ID in the admin key's workspace (the admin API).
        case adminKeyNotFound = "admin_key_not_found"
        /// An admin key or console session that is missing, unknown, revoked or expired.
        case adminUnauthenticated = "unauthorized"
        /// A debug token that is unknown, expired, revoked or another integration's (one answer).
        case invalidDebugToken = "invalid_debug_token"
        /// No debug token with this ID for this integration (the admin API, attestctl).
        case debugTokenNotFound = "debug_token_not_found"
        /// No open offer of the workspace's ownership to this admin key (the admin API).
        case ownershipOfferNotFound = "ownership_offer_not_found"
        /// The integration holds its maximum of live debug tokens.
        case debugTokenLimit = "debug_token_limit"
        /// The operator does not let workspace admins unblock devices (`--device-unblock`).
        case unblockDisabled = "unblock_disabled"
    }

    /// The request fields, by their wire names.
    package enum RequestField: String, Sendable, Hashable, CaseIterable {
        case clientID = "client_id"
        case keyID = "key_id"
        case attestation
        case assertion
        case challenge
        case token
        case now
        /// The DeviceCheck key of `integration set-fraud-key`.
        case fraudKey = "fraud_key"
        /// The admin API's fields.
        case confirm
        /// The admin key a console sign-in presents.
        case key
        case name
        case role
        case teamID = "team_id"
        case bundleIDs = "bundle_ids"
        case environment
        case policy
        case expiresIn = "expires_in"
        case debugToken = "debug_token"
        /// The admin API's listing parameters (pages, filters, export).
        case limit
        case cursor
        case status
        case action
        case actor
        case target
        case from
        case to
        case format
        /// The range of an integration's verification counts (`24h` or `30d`).
        case range
        /// An admin key's revocation: it leaked (revoke the keys it created too).
        case compromised
        /// The device listing's order (`newest` or `last_seen`).
        case sort
    }

    /// The integration settings `attestctl integration create` validates.
    package enum IntegrationField: String, Sendable, Hashable, CaseIterable {
        case workspaceID = "workspace_id"
        case name
        case teamID = "team_id"
        case bundleID = "bundle_id"
        case bundleIDCount = "bundle_id_count"
        case bundleIDDuplicate = "bundle_id_duplicate"
        case environment
        /// A stored integration whose App ID no longer validates.
        case storedAppID = "stored_app_id"
    }

    /// Which check or field: the wire's `reason`.
    package enum Subcode: Sendable, Hashable {
        /// A verification check failed (or the verifier found the object malformed).
        case check(AttestError.Code)
        /// The field is missing from the request body.
        case missing(RequestField)
        /// The field is present but not in its required form.
        case field(RequestField)
        /// The field is longer than its limit (refused before decoding).
        case tooLarge(RequestField)
        /// The body is not one JSON object of string values.
        case json
        /// A JSON key appears twice.
        case jsonDuplicateKey
        /// A setting of a new integration is invalid.
        case integration(IntegrationField)
        case integrationNotFound
        case integrationRevoked
        case integrationSuspended
        case deviceBlocked
        case keyAlreadyRegistered
        case challengeUnknown
        case challengeUsed
        case challengeExpired
        case challengeWrongIntegration
        case rateLimited
        /// The integration registered its allowed number of new keys in the last hour.
        case newKeysPerHour
        case riskMetricExceeded
        /// No verified fraud-risk metric for the device past the grace period.
        case riskMetricUnknown
        case receiptRequired
        /// A test-mode route or value outside `--insecure-test-mode`.
        case testMode
        /// The storage failed with this code.
        case storage(StorageError.Code)
        /// The random source failed.
        case random
        /// The admin key's role is below what the action needs.
        case forbiddenRole
        case deviceNotFound
        case tokenNotFound
        case adminKeyNotFound
        /// No admin key or session was presented, or it is unknown, revoked or expired.
        case adminCredential
        /// A key may not revoke itself through the API (it would lock its holder out mid-session).
        case ownKey
        /// This node's clock and the shared database's disagree past the tolerance.
        case clockSkew
        /// The debug token was refused (`invalid_debug_token`).
        case debugToken
        case debugTokenNotFound
        case ownershipOfferNotFound
        case debugTokenLimit
        case unblockDisabled

        /// The stable wire spelling.
        package var identifier: String {
            switch self {
            case .check(let code): code.identifier
            case .missing(let field): "missing_\(field.rawValue)"
            case .field(let field): field.rawValue
            case .tooLarge(let field): "\(field.rawValue)_too_large"
            case .json: "json"
            case .jsonDuplicateKey: "json_duplicate_key"
            case .integration(let field): field.rawValue
            case .integrationNotFound: "integration_not_found"
            case .integrationRevoked: "integration_revoked"
            case .integrationSuspended: "integration_suspended"
            case .deviceBlocked: "device_blocked"
            case .keyAlreadyRegistered: "key_already_registered"
            case .challengeUnknown: "challenge_unknown"
            case .challengeUsed: "challenge_used"
            case .challengeExpired: "challenge_expired"
            case .challengeWrongIntegration: "challenge_wrong_integration"
            case .rateLimited: "rate_limited"
            case .newKeysPerHour: "new_keys_per_hour"
            case .riskMetricExceeded: "risk_metric_exceeded"
            case .riskMetricUnknown: "risk_metric_unknown"
            case .receiptRequired: "receipt_required"
            case .testMode: "test_mode"
            case .storage(let code): code.rawValue
            case .random: "random"
            case .forbiddenRole: "forbidden_role"
            case .deviceNotFound: "device_not_found"
            case .tokenNotFound: "token_not_found"
            case .adminKeyNotFound: "admin_key_not_found"
            case .adminCredential: "admin_credential"
            case .ownKey: "own_key"
            case .clockSkew: "clock_skew"
            case .debugToken: "debug_token"
            case .debugTokenNotFound: "debug_token_not_found"
            case .ownershipOfferNotFound: "ownership_offer_not_found"
            case .debugTokenLimit: "debug_token_limit"
            case .unblockDisabled: "unblock_disabled"
            }
        }
    }

    /// What kind of refusal.
    package let code: Code
    /// Which check or field.
    package let subcode: Subcode
    /// A sentence for logs and the problem document's `detail`.
    package let reason: String
    /// For `rateLimited` and `storageUnavailable`: seconds until a retry may succeed.
    package let retryAfter: Int?

    /// Makes an error; prefer the static factories named after the refusal.
    package init(_ code: Code, _ subcode: Subcode, _ reason: String, retryAfter: Int? = nil) {
        (self.code, self.subcode, self.reason, self.retryAfter) = (code, subcode, reason, retryAfter)
    }

    /// `code/subcode: reason`, safe to log.
    package var description: String { "\(code.rawValue)/\(subcode.identifier): \(reason)" }

    /// Equal when code and sub-code are equal; the sentence is not compared.
    package static func == (lhs: ServiceError, rhs: ServiceError) -> Bool { lhs.code == rhs.code && lhs.subcode == rhs.subcode }
    /// Hashes what `==` compares.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(code)
        hasher.combine(subcode)
    }
}

extension ServiceError {
    /// A request that is missing a field or has one in the wrong form.
    package static func malformed(_ subcode: Subcode, _ reason: String) -> ServiceError {
        ServiceError(.malformedRequest, subcode, reason)
    }

    /// An invalid setting of a new integration.
    package static func invalidIntegration(_ field: IntegrationField, _ reason: String) -> ServiceError {
        ServiceError(.invalidIntegration, .integration(field), reason)
    }

    /// The storage could not serve the request now (busy past the timeout, unreachable, disk full, I/O).
    package static func storage(_ error: StorageError) -> ServiceError {
        ServiceError(.storageUnavailable, .storage(error.code), "storage: \(error.reason)", retryAfter: 1)
    }

    /// The storage did not answer within `milliseconds` (a request waiting without a worker:
    /// its answer is given up, whatever the storage does later).
    package static func storageTimedOut(after milliseconds: Int) -> ServiceError {
        .storage(StorageError(.unavailable, "no answer from the storage within \(milliseconds) ms"))
    }

    /// The random source failed.
    /// Work withdrawn at a stop before it ran: nothing of the request was done.
    package static let stopping = ServiceError.storage(StorageError(.unavailable, "attestd is stopping; nothing of this request was done"))
    package static let randomFailed = ServiceError(.internalError, .random, "the random source failed")

    /// A verifier refusal, as attestation or assertion rejection (or malformed input).
    package static func rejected(_ error: AttestError, attestation: Bool) -> ServiceError {
        if error.code.isMalformedInput { return .malformed(.check(error.code), error.reason) }
        return ServiceError(attestation ? .attestationRejected : .assertionRejected, .check(error.code), error.reason)
    }

    static let integrationNotFound = ServiceError(.integrationNotFound, .integrationNotFound, "no integration has this client ID")
    static let integrationRevoked = ServiceError(.integrationRevoked, .integrationRevoked, "the integration has been revoked")
    static let integrationSuspended = ServiceError(
        .integrationSuspended, .integrationSuspended, "the integration is suspended; its operator can resume it")
    /// The admin key's role may not take the action: `needed` names the lowest role that may.
    static func forbiddenRole(_ role: AdminRole, needs needed: AdminRole, to action: String) -> ServiceError {
        ServiceError(.forbiddenRole, .forbiddenRole, "the \(role.rawValue) role may not \(action); it needs \(needed.rawValue) or above")
    }
    /// No valid admin key or console session (401).
    package static let adminUnauthenticated = ServiceError(
        .adminUnauthenticated, .adminCredential, "send Authorization: Bearer adm_... with a valid admin key, or sign in again")
    static let deviceNotFound = ServiceError(.deviceNotFound, .deviceNotFound, "no device has this key ID in this workspace")
    static let unblockDisabled = ServiceError(
        .unblockDisabled, .unblockDisabled,
        "this attestd does not let workspace admins unblock devices (its operator sets --device-unblock)")
    static let tokenNotFound = ServiceError(.tokenNotFound, .tokenNotFound, "no live token with this value in this workspace")
    static let adminKeyNotFound = ServiceError(.adminKeyNotFound, .adminKeyNotFound, "no admin key has this ID in this workspace")
    static let deviceBlocked = ServiceError(.deviceBlocked, .deviceBlocked, "this device key is blocked")
    static let keyAlreadyRegistered = ServiceError(.keyAlreadyRegistered, .keyAlreadyRegistered, "this key ID is already registered")
    static let challengeUnknown = ServiceError(.invalidChallenge, .challengeUnknown, "this challenge was not issued")
    static let challengeUsed = ServiceError(.invalidChallenge, .challengeUsed, "this challenge was already presented")
    static let challengeExpired = ServiceError(.invalidChallenge, .challengeExpired, "this challenge has expired")
    static let challengeWrongIntegration = ServiceError(
        .invalidChallenge, .challengeWrongIntegration, "this challenge was issued to another integration")

    /// Too many requests for `key`'s bucket.
    static func rateLimited(retryAfter: Int) -> ServiceError {
        ServiceError(.rateLimited, .rateLimited, "too many requests; retry later", retryAfter: retryAfter)
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
