public import Foundation

/// The four calls of Apple's `DCAppAttestService`, which `AttestClient` drives: the device's
/// Secure Enclave on an iPhone or Mac (`DeviceCheckAppAttestDevice`), or a synthetic device in
/// tests and on Linux (`SimulatedAppAttestDevice` in `AttestClientSimulator`). Key IDs are the
/// standard base64 text `generateKey()` returns, as Apple's service gives them.
///
/// An implementation reports the conditions the client acts on as `AppAttestDeviceError`:
/// `.invalidKey` (the key is unusable, or was already attested, or is not attested yet),
/// `.serverUnavailable` (Apple's service could not be reached: retry later with the same key and
/// client data hash) and `.featureUnsupported`. Any other error ends the `token()` call as it is.
public protocol AppAttestDevice: Sendable {
    /// Whether this device can use App Attest at all (false in the iOS Simulator, on most Macs,
    /// and in app extensions).
    var isSupported: Bool { get }
    /// A new key pair in the Secure Enclave; its key ID (standard base64 of 32 bytes).
    func generateKey() async throws -> String
    /// Apple's attestation of `keyID`, binding `clientDataHash` (32 bytes); a key is attested once.
    func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data
    /// An assertion by the attested key `keyID` over `clientDataHash`.
    func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data
}

/// The outcomes of an App Attest call that `AttestClient` handles itself, mirroring the
/// `DCError` codes that call for a particular reaction.
public enum AppAttestDeviceError: Error, Sendable, Equatable {
    /// The key cannot be used for this call: unknown to the device, already attested (for
    /// `attestKey`), not attested yet (for `generateAssertion`), or rejected by Apple. Apple's
    /// `DCError.invalidKey`.
    case invalidKey
    /// Apple's App Attest service could not be reached during an attestation; try again later with
    /// the same key and the same client data hash. Apple's `DCError.serverUnavailable`.
    case serverUnavailable
    /// App Attest is not available on this device. Apple's `DCError.featureUnsupported`.
    case featureUnsupported
}
