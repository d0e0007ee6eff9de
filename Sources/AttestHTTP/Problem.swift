import AttestHTTPServer
import AttestService
import Foundation

/// An `application/problem+json` answer (RFC 9457) with the stable `code` and `reason` fields
/// documented in docs/API.md.
struct Problem: Error, Sendable {
    let status: Int
    let code: String
    let reason: String
    let detail: String
    var headers: [HTTPHeader] = []

    /// The HTTP status for each service error code.
    static func status(for code: ServiceError.Code) -> Int {
        switch code {
        case .malformedRequest, .invalidIntegration: 400
        case .invalidChallenge, .attestationRejected, .assertionRejected, .invalidToken: 401
        case .integrationRevoked, .deviceBlocked: 403
        case .integrationNotFound: 404
        case .keyAlreadyRegistered: 409
        case .rateLimited: 429
        case .storageUnavailable: 503
        }
    }

    init(status: Int, code: String, reason: String, detail: String, headers: [HTTPHeader] = []) {
        self.status = status
        self.code = code
        self.reason = reason
        self.detail = detail
        self.headers = headers
    }

    init(_ error: ServiceError) {
        status = Self.status(for: error.code)
        code = error.code.rawValue
        reason = error.reason
        // A storage failure's detail can name SQLite internals: keep it in the log only.
        detail = error.code == .storageUnavailable ? "storage is unavailable; retry later" : error.detail
        if let retry = error.retryAfter { headers = [HTTPHeader(name: "Retry-After", value: String(retry))] }
    }

    static func malformed(_ reason: String, _ detail: String) -> Problem {
        Problem(status: 400, code: "malformed_request", reason: reason, detail: detail)
    }

    var response: HTTPResponse {
        let body = JSONBody.encode([
            ("type", "about:blank"), ("title", HTTPStatus.phrase(status)), ("status", status), ("code", code), ("reason", reason),
            ("detail", detail),
        ])
        return HTTPResponse(
            status: status, headers: [HTTPHeader(name: "Content-Type", value: "application/problem+json")] + headers, body: body)
    }
}

enum HTTPStatus {
    static func phrase(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 400: "Bad Request"
        case 401: "Unauthorized"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 429: "Too Many Requests"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }
}

/// JSON bodies of the API: flat objects of strings, integers and booleans, written directly
/// (members in the given order).
enum JSONBody {
    static func encode(_ members: [(String, any Sendable)]) -> [UInt8] {
        var text = "{"
        for (index, (key, value)) in members.enumerated() {
            if index > 0 { text += "," }
            JSONText.appendString(key, to: &text)
            text += ":"
            JSONText.appendValue(value, to: &text)
        }
        return Array((text + "}").utf8)
    }

    static func response(_ members: [(String, any Sendable)], status: Int = 200, headers: [HTTPHeader] = []) -> HTTPResponse {
        HTTPResponse(
            status: status,
            headers: [HTTPHeader(name: "Content-Type", value: "application/json"), HTTPHeader(name: "Cache-Control", value: "no-store")]
                + headers,
            body: encode(members))
    }
}
