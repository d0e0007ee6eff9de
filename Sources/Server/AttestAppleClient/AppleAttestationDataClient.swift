import AttestCrypto

/// What Apple's attestationData endpoint answered for one receipt.
package enum AttestationDataAnswer: Sendable, Equatable {
    /// 200: a new receipt (decoded from the body's base64).
    case receipt([UInt8])
    /// 304: the receipt sent is still the newest (Apple refreshes at most once a day).
    case notModified
    /// Any other status; `retryAfter` is the `Retry-After` seconds when given (429, 503).
    case refused(status: Int, retryAfter: Int?)
    /// A 200 whose body is not a base64 receipt.
    case malformed(String)
    /// No HTTP answer at all (DNS, connect, TLS, timeout).
    case unreachable(HTTPClientError)
}

/// Apple's App Attest receipt exchange (`POST /v1/attestationData`): the device's current receipt in,
/// a newer one (with a fresh fraud-risk metric) out.
///
/// Request as Apple documents it: the body is the receipt in standard base64, and `Authorization`
/// carries the ES256 JWT itself, without a "Bearer" prefix.
package struct AppleAttestationDataClient: Sendable {
    /// Apple's production host (keys attested in the production environment).
    package static let productionBaseURL = "https://data.appattest.apple.com"
    /// Apple's development host (keys from development-signed builds).
    package static let developmentBaseURL = "https://data-development.appattest.apple.com"
    /// The endpoint's path below either host.
    package static let path = "/v1/attestationData"

    let client: HTTPSClient
    /// When set, every environment goes to this base URL (`--apple-receipt-url`, for tests).
    package let overrideBaseURL: String?

    /// A client over `client`; Apple's hosts by environment unless `overrideBaseURL` is set.
    package init(client: HTTPSClient, overrideBaseURL: String? = nil) {
        self.client = client
        self.overrideBaseURL = overrideBaseURL.map { $0.hasSuffix("/") ? String($0.dropLast()) : $0 }
    }

    /// The endpoint for a device of `environment` (`production` or `development`).
    package func url(environment: String) -> String {
        let base = overrideBaseURL ?? (environment == "development" ? Self.developmentBaseURL : Self.productionBaseURL)
        return base + Self.path
    }

    /// Sends `receipt` with `jwt` and classifies the answer.
    package func exchange(receipt: [UInt8], jwt: String, environment: String) -> AttestationDataAnswer {
        let response: HTTPClientResponse
        do {
            response = try client.post(
                url: url(environment: environment), headers: ["Authorization: " + jwt, "Content-Type: application/octet-stream"],
                body: Array(Base64Text.encode(receipt).utf8))
        } catch {
            return .unreachable(error)
        }
        switch response.status {
        case 200:
            let text = String(decoding: response.body, as: UTF8.self).filter { !$0.isWhitespace }
            guard !text.isEmpty else { return .malformed("a 200 answer with an empty body") }
            guard let bytes = Base64Text.decode(text), !bytes.isEmpty else { return .malformed("a 200 answer whose body is not base64") }
            return .receipt(bytes)
        case 304:
            return .notModified
        default:
            let retryAfter = response.header("retry-after").flatMap { Int($0) }.map { max(0, $0) }
            return .refused(status: response.status, retryAfter: retryAfter)
        }
    }
}
