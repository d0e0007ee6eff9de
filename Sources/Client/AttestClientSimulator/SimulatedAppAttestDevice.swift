public import AttestClient
import AttestCore
import AttestCrypto
import AttestSimulator
public import Foundation

/// A synthetic App Attest device for tests, demos and Linux: attestations and assertions
/// byte-compatible with Apple's, signed under the synthetic PKI of a simulator state directory,
/// the same one `attestctl simulate --state DIR` keeps (so `attestctl simulate --state DIR
/// --write-trust-anchor root.pem` writes the root attestd must trust). Its keys are kept in that
/// directory too (`devices/<team ID>.<bundle ID>/`), so another instance on the same directory is
/// the same device after an app restart.
///
/// It answers as `DCAppAttestService` does: `AppAttestDeviceError.invalidKey` for an unknown key,
/// for a second attestation of a key (unless `reattestation` is `.allowed`) and for an assertion
/// by a key not yet attested.
public struct SimulatedAppAttestDevice: AppAttestDevice {
    /// The App Attest environment the attestations claim (their aaguid).
    public enum Environment: String, Sendable {
        case production
        case development
    }

    /// Whether a key can be attested twice. Apple's service refuses (`.refused`, the default);
    /// `.allowed` lets a test drive attestd's 409 `key_already_registered`.
    public enum Reattestation: Sendable {
        case refused
        case allowed
    }

    /// Why the simulator could not start: an unusable state directory or App ID.
    public struct SetupError: Error, Sendable, CustomStringConvertible {
        public let description: String
    }

    public let stateDirectory: URL
    private let pki: SyntheticPKI
    private let appID: AppID
    private let environment: AppAttestEnvironment
    private let keys: SimulatorDeviceKeys
    private let reattestation: Reattestation

    /// The device of the app `teamID`.`bundleID`, its PKI and keys in `stateDirectory` (made,
    /// with a new PKI, when it does not exist).
    public init(
        stateDirectory: URL, teamID: String, bundleID: String, environment: Environment = .production,
        reattestation: Reattestation = .refused
    ) throws {
        let state = SimulatorState(directory: stateDirectory.path)
        do {
            appID = try AppID(teamID: teamID, bundleID: bundleID)
        } catch {
            throw SetupError(description: "teamID/bundleID: \(error.reason)")
        }
        do {
            pki = try state.load(now: Int64(Date().timeIntervalSince1970)).pki
        } catch {
            throw SetupError(description: error.description)
        }
        self.stateDirectory = stateDirectory
        self.environment = environment == .production ? .production : .development
        self.reattestation = reattestation
        keys = SimulatorDeviceKeys(state: state, appID: appID)
    }

    public var isSupported: Bool { true }

    public func generateKey() async throws -> String {
        Base64Text.encode(try keys.create().keyID)
    }

    public func attestKey(_ keyID: String, clientDataHash: Data) async throws -> Data {
        let attestation = try keys.update(try Self.bytes(keyID)) { record throws -> [UInt8] in
            guard !record.attested || reattestation == .allowed else { throw AppAttestDeviceError.invalidKey }
            let parts = record.device.attestationParts(
                appID: appID, environment: environment, clientDataHash: Array(clientDataHash), time: Int64(Date().timeIntervalSince1970))
            let object = try record.device.attestationObject(parts, pki: pki)
            record.attested = true
            return object
        }
        guard let attestation else { throw AppAttestDeviceError.invalidKey }
        return Data(attestation)
    }

    public func generateAssertion(_ keyID: String, clientDataHash: Data) async throws -> Data {
        let assertion = try keys.update(try Self.bytes(keyID)) { record throws -> [UInt8] in
            guard record.attested else { throw AppAttestDeviceError.invalidKey }
            record.device.counter &+= 1
            return try record.device.assertion(
                clientDataHash: Array(clientDataHash), rpIDHash: appID.rpIDHash, counter: record.device.counter)
        }
        guard let assertion else { throw AppAttestDeviceError.invalidKey }
        return Data(assertion)
    }

    /// The 32 bytes of a key ID's base64 text; `invalidKey` for anything else, as Apple answers.
    private static func bytes(_ keyID: String) throws -> [UInt8] {
        guard let bytes = Base64Text.decode(keyID), bytes.count == 32 else { throw AppAttestDeviceError.invalidKey }
        return bytes
    }
}
