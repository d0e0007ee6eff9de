public import Foundation

/// Why `AttestClient.token()` could not give a token. docs/CLIENT.md says what an app should do
/// with each. (`token()` may also throw `CancellationError` when the calling task is cancelled,
/// and, unchanged, an error of the key store or one the device reports outside
/// `AppAttestDeviceError`.)
public enum AttestClientError: Error, Sendable, Equatable {
    /// App Attest is not available on this device (`isSupported` is false, or the device said
    /// `featureUnsupported`). No request was made.
    case unsupportedDevice
    /// attestd knows no integration with this client ID (404 `integration_not_found`).
    case integrationNotFound
    /// The integration was revoked, permanently (403 `integration_revoked`). From then on this
    /// client throws it at once without any request.
    case integrationRevoked
    /// The integration is suspended while its operator investigates (403
    /// `integration_suspended`); a later call tries again.
    case integrationSuspended
    /// This device's key is blocked (403 `device_blocked`). The client does not make a new key to
    /// get around the block.
    case deviceBlocked
    /// attestd answered 429 past the retry budget; `retryAfter` is its `Retry-After` in seconds.
    case rateLimited(retryAfter: TimeInterval?)
    /// attestd (or Apple's App Attest service) was unavailable past the retry budget: 503, another
    /// 5xx, or `DCError.serverUnavailable`; `retryAfter` is the service's `Retry-After`, if any.
    case serviceUnavailable(retryAfter: TimeInterval?)
    /// attestd refused the request for another reason: the problem's HTTP status, `code` and
    /// `reason` (docs/API.md), e.g. 400 `malformed_request`/`client_id` for a misspelt client ID, or
    /// 401 `attestation_rejected`/`environment_not_allowed`.
    case rejected(status: Int, code: String, reason: String)
    /// No usable answer from attestd within the retry budget: no connection, a dropped connection,
    /// a timeout, or an answer that is not attestd's; the text says which.
    case transport(String)
    /// `authorize(_:)` was given a request for a host that is not one of `Configuration.apiHosts`
    /// (or over plain http to a host that is not loopback): the token was not attached.
    case hostNotAllowed(String)
}

extension AttestClientError: LocalizedError, CustomStringConvertible {
    /// A sentence for people and logs, with attestd's `code` and `reason` where it gave them.
    /// Never a token, key ID or assertion.
    public var errorDescription: String? {
        switch self {
        case .unsupportedDevice:
            "App Attest is not available on this device (the Simulator, most Macs, app extensions): use a debug token in debug builds."
        case .integrationNotFound: "attestd knows no integration with this client ID (integration_not_found): check the client ID."
        case .integrationRevoked: "This app's integration was revoked for good (integration_revoked): the app needs a new client ID."
        case .integrationSuspended: "This app's integration is suspended by its operator (integration_suspended): try again later."
        case .deviceBlocked:
            "This device's App Attest key is blocked (device_blocked): the operator unblocks it, or the app starts over with resetKey()."
        case .rateLimited(let retryAfter):
            "attestd is limiting requests (rate_limited)" + (retryAfter.map { "; retry in \(Int($0.rounded(.up))) s." } ?? "; retry later.")
        case .serviceUnavailable(let retryAfter):
            "attestd or Apple's App Attest service is unavailable"
                + (retryAfter.map { "; retry in \(Int($0.rounded(.up))) s." } ?? "; retry later.")
        case .rejected(let status, let code, let reason):
            "attestd refused the request: HTTP \(status)" + (code.isEmpty ? "" : ", \(code)") + (reason.isEmpty ? "" : "/\(reason)") + "."
        case .transport(let text): "No usable answer from attestd: \(text)."
        case .hostNotAllowed(let host):
            "The access token is sent only to the API's hosts over https (Configuration.apiHosts); not to '\(host)'."
        }
    }

    public var description: String { errorDescription ?? "AttestClientError" }
}
