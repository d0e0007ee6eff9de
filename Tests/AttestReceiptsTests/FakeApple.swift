import AttestCrypto
import AttestHTTPServer
import Foundation
import Synchronization

/// Apple's attestationData endpoint, faked on 127.0.0.1 (port 0): it checks every request the way
/// Apple documents it (POST /v1/attestationData, a raw ES256 JWT in Authorization with the expected
/// kid, iss and a fresh iat, signed by the integration's DeviceCheck key; the body the device's
/// receipt in base64) and answers what the test chose.
final class FakeApple: HTTPResponder, Sendable {
    struct Expectation: Sendable {
        let publicKey: PublicKey
        let keyID: String
        let teamID: String
        let now: @Sendable () -> Int64
    }

    struct Seen: Sendable {
        let path: String
        let jwtProblems: [String]
        let body: [UInt8]
    }

    private let expectation: Expectation
    private let answer: Mutex<HTTPResponse>
    private let seen = Mutex<[Seen]>([])

    init(expectation: Expectation, answer: HTTPResponse) {
        self.expectation = expectation
        self.answer = Mutex(answer)
    }

    var requests: [Seen] { seen.withLock { $0 } }
    func answer(with response: HTTPResponse) { answer.withLock { $0 = response } }

    func respond(to request: HTTPRequest) -> HTTPResponse {
        var problems: [String] = []
        if request.method != "POST" { problems.append("method \(request.method)") }
        if request.path != "/v1/attestationData" { problems.append("path \(request.path)") }
        problems += Self.check(jwt: request.header("Authorization") ?? "", expectation)
        let body = Base64Text.decode(String(decoding: request.body, as: UTF8.self)) ?? []
        if body.isEmpty { problems.append("the body is not base64") }
        seen.withLock { $0.append(Seen(path: request.path, jwtProblems: problems, body: body)) }
        guard problems.isEmpty else { return HTTPResponse(status: 401, body: Array("unauthorized".utf8)) }
        return answer.withLock { $0 }
    }

    /// Everything wrong with `jwt` (empty: it is what Apple expects).
    static func check(jwt: String, _ expectation: Expectation) -> [String] {
        if jwt.hasPrefix("Bearer ") { return ["a Bearer prefix"] }
        let parts = jwt.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
        guard parts.count == 3, let headerBytes = Base64Text.decode(parts[0], .url), let payloadBytes = Base64Text.decode(parts[1], .url),
            let signature = Base64Text.decode(parts[2], .url)
        else { return ["not a compact JWS with base64url parts"] }
        guard let header = try? JSONSerialization.jsonObject(with: Data(headerBytes)) as? [String: Any],
            let payload = try? JSONSerialization.jsonObject(with: Data(payloadBytes)) as? [String: Any]
        else { return ["header or payload is not a JSON object"] }
        var problems: [String] = []
        if header["alg"] as? String != "ES256" { problems.append("alg is not ES256") }
        if header["kid"] as? String != expectation.keyID { problems.append("kid is not \(expectation.keyID)") }
        if payload["iss"] as? String != expectation.teamID { problems.append("iss is not \(expectation.teamID)") }
        if let iat = (payload["iat"] as? NSNumber)?.int64Value {
            if abs(iat - expectation.now()) > 60 { problems.append("iat is not within a minute") }
        } else {
            problems.append("no numeric iat")
        }
        if signature.count != 64 { problems.append("the signature is not raw r||s (64 bytes)") }
        let signed = Array((parts[0] + "." + parts[1]).utf8)
        if let der = try? ECDSASignature.der(fromRaw: signature),
            expectation.publicKey.verifySignature(der, over: signed, digest: .sha256)
        {
        } else {
            problems.append("the ES256 signature does not verify with the DeviceCheck public key")
        }
        return problems
    }
}
