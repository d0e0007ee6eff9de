import Foundation

#if canImport(FoundationNetworking)
    import FoundationNetworking
#endif

/// A token as attestd issued it: the bearer value and its lifetime in seconds.
struct IssuedToken: Sendable {
    let value: String
    let lifetime: TimeInterval
}

/// An answer from attestd (or from whatever answers in front of it) other than 200: its status,
/// the problem's `code` and `reason` (empty when the body is not a problem), and `Retry-After`.
struct Refusal: Error, Sendable, Equatable {
    let status: Int
    let code: String
    let reason: String
    let retryAfter: TimeInterval?
}

/// No answer that can be read: no connection, a dropped one, a timeout, or a 200 that is not
/// attestd's. Whether the request reached attestd is unknown.
package struct TransportFailure: Error, Sendable {
    let description: String

    package init(description: String) {
        self.description = description
    }
}

/// The three requests of the device flow (docs/API.md), one `URLSession` request each, with
/// nothing retried here: the flow decides. Never logs, and never puts a token, key ID or
/// assertion into an error.
struct ServiceConnection: Sendable {
    let baseURL: URL
    let clientID: String
    let transport: any Transport
    /// The longest one request may take.
    let timeout: TimeInterval
    /// What `callDeadline` is measured on.
    let clock: any MonotonicClock

    /// The monotonic instant (`clock.now()`) by which the current `token()` call must
    /// end, requests included: set by the call for everything it awaits. A request gets the
    /// smaller of `timeout` and what is left; none starts after it.
    @TaskLocal static var callDeadline: TimeInterval?

    /// POST /v1/challenge: a challenge and how long attestd accepts it (seconds).
    func challenge() async throws -> (ClientData, lifetime: TimeInterval) {
        struct Answer: Decodable {
            let challenge: String
            let expiresIn: Double?

            enum CodingKeys: String, CodingKey {
                case challenge
                case expiresIn = "expires_in"
            }
        }
        let body = try await post("v1/challenge", ["client_id": clientID])
        guard let answer = try? JSONDecoder().decode(Answer.self, from: body), let data = ClientData(challenge: answer.challenge) else {
            throw TransportFailure(description: "the answer to /v1/challenge is not attestd's")
        }
        return (data, answer.expiresIn ?? 300)
    }

    /// POST /v1/attest with the attestation of `keyID` over `challenge`.
    func attest(keyID: String, attestation: Data, challenge: ClientData) async throws -> IssuedToken {
        try token(
            try await post(
                "v1/attest",
                [
                    "client_id": clientID, "key_id": keyID, "attestation": attestation.base64EncodedString(),
                    "challenge": challenge.challenge,
                ]), path: "/v1/attest")
    }

    /// POST /v1/token with an assertion of `keyID` over `challenge`.
    func refresh(keyID: String, assertion: Data, challenge: ClientData) async throws -> IssuedToken {
        try token(
            try await post(
                "v1/token",
                ["client_id": clientID, "key_id": keyID, "assertion": assertion.base64EncodedString(), "challenge": challenge.challenge]),
            path: "/v1/token")
    }

    /// POST /v1/debug-token: an access token for a debug token (builds that cannot attest).
    func exchange(debugToken: String) async throws -> IssuedToken {
        try token(try await post("v1/debug-token", ["client_id": clientID, "debug_token": debugToken]), path: "/v1/debug-token")
    }

    /// Whether `value` has an access token's documented form: `atk_` and 43 base64url characters
    /// (docs/API.md). Anything else is not attestd's answer, and is never cached or sent on.
    static func isAccessToken(_ value: String) -> Bool {
        let body = value.utf8.dropFirst(4)
        return value.hasPrefix("atk_") && body.count == 43
            && body.allSatisfy { byte in
                (UInt8(ascii: "A")...UInt8(ascii: "Z")).contains(byte) || (UInt8(ascii: "a")...UInt8(ascii: "z")).contains(byte)
                    || (UInt8(ascii: "0")...UInt8(ascii: "9")).contains(byte) || byte == UInt8(ascii: "-") || byte == UInt8(ascii: "_")
            }
    }

    private func token(_ body: Data, path: String) throws -> IssuedToken {
        struct Answer: Decodable {
            let accessToken: String
            let expiresIn: Double

            enum CodingKeys: String, CodingKey {
                case accessToken = "access_token"
                case expiresIn = "expires_in"
            }
        }
        guard let answer = try? JSONDecoder().decode(Answer.self, from: body), Self.isAccessToken(answer.accessToken),
            answer.expiresIn > 0, answer.expiresIn <= 86_400
        else {
            throw TransportFailure(description: "the answer to \(path) is not attestd's")
        }
        return IssuedToken(value: answer.accessToken, lifetime: answer.expiresIn)
    }

    /// The body of a 200 answer to a JSON POST; throws `Refusal` for any other status,
    /// `TransportFailure` when there is no answer, `CancellationError` when the task is cancelled.
    private func post(_ path: String, _ fields: [String: String]) async throws -> Data {
        var request = URLRequest(
            url: baseURL.appendingPathComponent(path), cachePolicy: .reloadIgnoringLocalCacheData, timeoutInterval: timeout)
        request.httpMethod = "POST"
        request.setValue("application/json", forHTTPHeaderField: "Content-Type")
        request.setValue("application/json", forHTTPHeaderField: "Accept")
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        request.httpBody = try encoder.encode(fields)
        var allowed = timeout
        if let deadline = Self.callDeadline {
            allowed = min(allowed, deadline - clock.now())
            guard allowed > 0 else { throw TransportFailure(description: "the call's retry budget is spent") }
        }
        let (body, response) = try await transport.send(request, timeout: allowed)
        guard response.statusCode == 200 else {
            struct Problem: Decodable {
                let code: String?
                let reason: String?
            }
            let problem = try? JSONDecoder().decode(Problem.self, from: body)
            throw Refusal(
                status: response.statusCode, code: problem?.code ?? "", reason: problem?.reason ?? "",
                retryAfter: RetrySchedule.retryAfter(response.value(forHTTPHeaderField: "Retry-After")))
        }
        return body
    }

    /// A URL loading error in words: its code and Foundation's sentence (neither carries a body).
    static func describe(_ error: any Error) -> String {
        if let error = error as? URLError { return "URLError \(error.code.rawValue): \(error.localizedDescription)" }
        return String(describing: type(of: error))
    }
}
