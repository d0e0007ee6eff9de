import AttestCore
import AttestCrypto
import AttestService
import AttestStorage
import AttestTesting
import Foundation
import Synchronization
import Testing

/// A temporary database, a synthetic PKI trusted as the anchor, an integration and a device.
struct ServiceWorld {
    static let start: Int64 = 1_800_000_000
    let directory: URL
    let store: SQLiteTokenStore
    let clock: SettableWallClock
    let pki: SyntheticPKI
    let service: TokenService
    let admin: IntegrationAdmin
    let integration: IntegrationRecord
    /// The integration's client ID, typed as the service takes it.
    var clientID: ClientID { ClientID(integration.clientID) ?? ClientID.unknown }
    let appID: AppID

    init(
        policy: ServicePolicy = ServicePolicy(), environments: Set<AppAttestEnvironment> = [.production, .development],
        bundleIDs: [String] = ["com.example.messages"]
    ) throws {
        directory = FileManager.default.temporaryDirectory.appendingPathComponent("attestd-service-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        clock = SettableWallClock(Self.start)
        store = try SQLiteTokenStore(path: directory.appendingPathComponent("attestd.sqlite").path, migrateAt: Self.start)
        pki = try SyntheticPKI(validAround: Self.start)
        service = TokenService(
            store: store, verifier: try AttestationVerifier(anchor: pki.anchor), clock: clock, policy: policy,
            receipts: try ReceiptVerifier.apple())
        admin = IntegrationAdmin(store: store, clock: clock)
        integration = try admin.create(
            workspaceID: "ws_test", name: "Test app", teamID: "ABCDE12345", bundleIDs: bundleIDs,
            environments: environments)
        appID = try AppID(teamID: "ABCDE12345", bundleID: "com.example.messages")
    }

    func remove() { try? FileManager.default.removeItem(at: directory) }

    func challenge() throws -> Challenge {
        let issued = try service.issueChallenge(clientID: clientID, from: "127.0.0.1")
        let bytes = try #require(Base64Text.decode(issued.challenge, .url))
        return try #require(Challenge(bytes))
    }

    /// A complete, valid attest request for `device`, with a fresh challenge.
    func attestRequest(
        _ device: SyntheticDevice, environment: AppAttestEnvironment = .production, under root: SyntheticPKI? = nil
    ) throws -> AttestRequest {
        let challenge = try challenge()
        let parts = device.attestationParts(
            appID: appID, environment: environment, clientDataHash: Digest.sha256(challenge.bytes), time: clock.now())
        return AttestRequest(
            clientID: clientID, keyID: try #require(KeyID(device.keyID)),
            object: try device.attestationObject(parts, pki: root ?? pki),
            challenge: challenge)
    }

    /// A complete, valid refresh request (next counter), with a fresh challenge.
    func refreshRequest(_ device: inout SyntheticDevice, counter: UInt32? = nil) throws -> RefreshRequest {
        let challenge = try challenge()
        return RefreshRequest(
            clientID: clientID, keyID: try #require(KeyID(device.keyID)),
            object: try device.assertion(clientData: challenge.bytes, appID: appID, counter: counter), challenge: challenge)
    }
}

/// Unwraps a `Result`'s failure as a `ServiceError` for `#expect`.
func serviceError(_ body: () throws -> some Any) -> ServiceError? {
    do {
        _ = try body()
        return nil
    } catch let error as ServiceError {
        return error
    } catch {
        return nil
    }
}

extension ClientID {
    /// A well-formed client ID that no integration has (`clid_` and zeros, then `index` in hex).
    static func unknown(_ index: Int) -> ClientID {
        let digits = String(index, radix: 16)
        return ClientID("clid_" + String(repeating: "0", count: ClientID.hexDigits - digits.count) + digits) ?? unknown
    }

    /// `clid_` and 32 zeros: well formed, and never issued in practice.
    static var unknown: ClientID {
        guard let id = ClientID("clid_" + String(repeating: "0", count: ClientID.hexDigits)) else {
            preconditionFailure("the all-zero client ID is well formed")
        }
        return id
    }
}
