package import AttestCore
import AttestCrypto
import Foundation

/// A challenge as attestd issued it: the base64url text sent back, and the 32 raw bytes that are
/// the client data (docs/API.md).
package struct IssuedChallenge: Sendable {
    package let text: String
    package let bytes: [UInt8]

    /// A challenge read from an answer (`attest-load trace` reads its own answers).
    package init(text: String, bytes: [UInt8]) { (self.text, self.bytes) = (text, bytes) }
}

/// The device side of the API, the one implementation `attestctl simulate` and `attest-load`
/// share: challenge, attest, refresh, authorize, each recording its outcome in a `DeviceLog`.
package struct DeviceFlow: Sendable {
    package let clientID: String
    package let appID: AppID
    package let environment: AppAttestEnvironment
    package let pki: SyntheticPKI
    /// Unix seconds, for the credential certificates' validity (the server checks it against its clock).
    package let now: @Sendable () -> Int64

    package init(
        clientID: String, appID: AppID, environment: AppAttestEnvironment, pki: SyntheticPKI, now: @escaping @Sendable () -> Int64
    ) {
        (self.clientID, self.appID, self.environment, self.pki, self.now) = (clientID, appID, environment, pki, now)
    }

    /// One whole device: challenge, attest, authorize the token; then per refresh challenge,
    /// assertion, /v1/token and authorize. A failed challenge, attest or refresh ends the device
    /// (what follows depends on it); a failed authorization does not.
    package func run(refreshes: Int, _ connection: inout Connection, _ log: inout DeviceLog) {
        var device: SyntheticDevice
        do {
            device = try SyntheticDevice()
        } catch {
            log.record(.attest, .simulator("cannot make a device key: \(error)"))
            return
        }
        guard let token = register(device, &connection, &log) else { return }
        log.lastToken = token
        authorize(token, &connection, &log)
        for _ in 0..<refreshes {
            guard let next = refresh(&device, &connection, &log) else { return }
            log.lastToken = next
            authorize(next, &connection, &log)
        }
        // Completed: every step succeeded (a failed authorization does not end a device, so check).
        log.completed = log.outcomes.allSatisfy { $0.failure == nil }
    }

    /// POST /v1/challenge.
    package func challenge(_ connection: inout Connection, _ log: inout DeviceLog) -> IssuedChallenge? {
        struct Answer: Decodable { let challenge: String }
        let request = DeviceRequest.json("/v1/challenge", ["client_id": clientID])
        return connection.perform(.challenge, request, log: &log) { body -> IssuedChallenge? in
            guard let answer = try? JSONDecoder().decode(Answer.self, from: Data(body)),
                let bytes = Base64Text.decode(answer.challenge, .url), bytes.count == 32
            else { return nil }
            return IssuedChallenge(text: answer.challenge, bytes: bytes)
        }
    }

    /// A challenge, then POST /v1/attest for `device`; the first access token.
    package func register(_ device: SyntheticDevice, _ connection: inout Connection, _ log: inout DeviceLog) -> String? {
        guard let issued = challenge(&connection, &log) else { return nil }
        do {
            return attest(try attestRequest(device, answering: issued), &connection, &log)
        } catch {
            log.record(.attest, error)
            return nil
        }
    }

    /// The POST /v1/attest request a genuine device would send for `issued` (made locally; it
    /// costs the client a P-256 key's attestation object signed by the P-384 intermediate).
    package func attestRequest(_ device: SyntheticDevice, answering issued: IssuedChallenge) throws(StepFailure) -> DeviceRequest {
        let object: [UInt8]
        do {
            let parts = device.attestationParts(
                appID: appID, environment: environment, clientDataHash: Digest.sha256(issued.bytes), time: now())
            object = try device.attestationObject(parts, pki: pki)
        } catch {
            throw .simulator("cannot make the attestation: \(error)")
        }
        return .json(
            "/v1/attest",
            [
                "client_id": clientID, "key_id": Base64Text.encode(device.keyID), "attestation": Base64Text.encode(object),
                "challenge": issued.text,
            ])
    }

    /// Sends a prepared attest request; the access token.
    package func attest(_ request: DeviceRequest, _ connection: inout Connection, _ log: inout DeviceLog) -> String? {
        connection.perform(.attest, request, log: &log, as: TokenAnswer.self)?.accessToken
    }

    /// A challenge, an assertion over it with the device's next counter, then POST /v1/token; the
    /// new access token.
    package func refresh(_ device: inout SyntheticDevice, _ connection: inout Connection, _ log: inout DeviceLog) -> String? {
        guard let issued = challenge(&connection, &log) else { return nil }
        let assertion: [UInt8]
        do {
            assertion = try device.assertion(clientData: issued.bytes, appID: appID)
        } catch {
            log.record(.refresh, .simulator("cannot make the assertion: \(error)"))
            return nil
        }
        return connection.perform(
            .refresh, refreshRequest(device, assertion: assertion, answering: issued), log: &log, as: TokenAnswer.self)?
            .accessToken
    }

    /// The POST /v1/token request carrying `assertion` over `issued`.
    package func refreshRequest(_ device: SyntheticDevice, assertion: [UInt8], answering issued: IssuedChallenge) -> DeviceRequest {
        .json(
            "/v1/token",
            [
                "client_id": clientID, "key_id": Base64Text.encode(device.keyID), "assertion": Base64Text.encode(assertion),
                "challenge": issued.text,
            ])
    }

    /// GET /v1/authorize with the token; whether it was accepted.
    @discardableResult
    package func authorize(_ token: String, _ connection: inout Connection, _ log: inout DeviceLog) -> Bool {
        let request = DeviceRequest(method: "GET", target: "/v1/authorize", headers: [("Authorization", "Bearer \(token)")], body: [])
        return connection.perform(.authorize, request, log: &log) { _ in () } != nil
    }
}

/// The field of a token answer the device uses.
private struct TokenAnswer: Decodable {
    let accessToken: String

    enum CodingKeys: String, CodingKey {
        case accessToken = "access_token"
    }
}
