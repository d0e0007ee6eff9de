import AttestCrypto
import AttestHTTPServer
import AttestService

/// An `application/problem+json` answer (RFC 9457): the stable `code` and `reason` fields of
/// docs/API.md and a `detail` sentence.
///
/// In Swift, as in every layer, `reason` is the human sentence and `subcode` the machine one;
/// the wire names them `detail` and `reason` (the contract predates this type). Both codes are
/// closed enums: the service's, plus the few that only HTTP produces.
struct Problem: Error, Sendable {
    /// The wire `code`.
    enum Code: Sendable, Hashable {
        case service(ServiceError.Code)
        case notFound
        case methodNotAllowed
        case unsupportedMediaType
        case unauthorized
        case invalidToken
        /// A console change without the session's CSRF token.
        case forbidden
        /// A connection over the per-address cap (answered by the HTTP server, not a route).
        case tooManyConnections

        /// The stable wire spelling.
        var identifier: String {
            switch self {
            case .service(let code): code.rawValue
            case .forbidden: "forbidden"
            case .notFound: "not_found"
            case .methodNotAllowed: "method_not_allowed"
            case .unsupportedMediaType: "unsupported_media_type"
            case .unauthorized: "unauthorized"
            case .invalidToken: "invalid_token"
            case .tooManyConnections: "too_many_connections"
            }
        }

        /// The HTTP status of each code.
        var status: Int {
            switch self {
            case .service(let code):
                switch code {
                case .malformedRequest, .invalidIntegration: 400
                case .invalidChallenge, .attestationRejected, .assertionRejected, .invalidDebugToken: 401
                case .integrationRevoked, .integrationSuspended, .deviceBlocked, .riskMetricExceeded, .receiptRequired: 403
                case .integrationNotFound, .deviceNotFound, .tokenNotFound, .adminKeyNotFound, .debugTokenNotFound, .ownershipOfferNotFound:
                    404
                case .adminUnauthenticated: 401
                case .forbiddenRole, .unblockDisabled: 403
                case .keyAlreadyRegistered, .debugTokenLimit: 409
                case .rateLimited: 429
                case .internalError: 500
                case .storageUnavailable: 503
                }
            case .notFound: 404
            case .methodNotAllowed: 405
            case .unsupportedMediaType: 415
            case .unauthorized, .invalidToken: 401
            case .forbidden: 403
            case .tooManyConnections: 503
            }
        }
    }

    /// The wire `reason`: the service's sub-code, or one of the few only HTTP produces.
    enum Subcode: Sendable, Hashable {
        case service(ServiceError.Subcode)
        case http(HTTPReason)

        /// The reasons only the HTTP layer gives, spelled as on the wire.
        enum HTTPReason: String, Sendable {
            case notFound = "not_found"
            case methodNotAllowed = "method_not_allowed"
            case contentType = "content_type"
            case gatewaySecret = "gateway_secret"
            case missingToken = "missing_token"
            case invalidToken = "invalid_token"
            case csrf
            case connectionsPerAddress = "connections_per_address"
            case unexpected = "unexpected_error"
        }

        static let notFound = Self.http(.notFound)
        static let methodNotAllowed = Self.http(.methodNotAllowed)
        static let contentType = Self.http(.contentType)
        static let gatewaySecret = Self.http(.gatewaySecret)
        static let missingToken = Self.http(.missingToken)
        static let invalidToken = Self.http(.invalidToken)
        static let csrf = Self.http(.csrf)
        static let connectionsPerAddress = Self.http(.connectionsPerAddress)

        /// The stable wire spelling.
        var identifier: String {
            switch self {
            case .service(let subcode): subcode.identifier
            case .http(let reason): reason.rawValue
            }
        }
    }

    let code: Code
    let subcode: Subcode
    /// The sentence sent as `detail`.
    let reason: String
    var headers: [HTTPHeader] = []
    /// What went wrong inside, for the log only (a storage failure's own message).
    let internalReason: String?

    /// The HTTP status.
    var status: Int { code.status }

    init(_ code: Code, _ subcode: Subcode, _ reason: String, headers: [HTTPHeader] = []) {
        self.code = code
        self.subcode = subcode
        self.reason = reason
        self.headers = headers
        internalReason = nil
    }

    /// The problem for a service refusal. A storage or internal failure's sentence can name
    /// SQLite or PostgreSQL internals: it goes to the log, and the caller gets a fixed sentence.
    init(_ error: ServiceError) {
        code = .service(error.code)
        subcode = .service(error.subcode)
        switch error.code {
        case .storageUnavailable where error.subcode == .clockSkew:
            // Logged once per measurement by the clock check, not once per refused request.
            reason = "this node's clock disagrees with the database's; retry later or on another node"
            internalReason = nil
        case .storageUnavailable:
            reason = "storage is unavailable; retry later"
            internalReason = error.reason
        case .internalError:
            reason = "attestd failed internally; retry later"
            internalReason = error.reason
        default:
            reason = error.reason
            internalReason = nil
        }
        if let retry = error.retryAfter { headers = [HTTPHeader(name: "Retry-After", value: String(retry))] }
    }

    /// The problem for whatever a route handler threw: a `Problem` as it is, the service's
    /// refusal as its matching problem (the one place that mapping runs), anything else 500.
    static func answering(_ error: any Error) -> Problem {
        switch error {
        case let problem as Problem: problem
        case let refusal as ServiceError: Problem(refusal)
        default: Problem(.service(.internalError), .http(.unexpected), "attestd failed internally; retry later")
        }
    }

    /// A malformed request (400 `malformed_request`).
    static func malformed(_ subcode: ServiceError.Subcode, _ reason: String) -> Problem {
        Problem(ServiceError.malformed(subcode, reason))
    }

    var response: HTTPResponse {
        let body = JSONBody.encode([
            ("type", "about:blank"), ("title", HTTPStatus.phrase(status)), ("status", status), ("code", code.identifier),
            ("reason", subcode.identifier), ("detail", reason),
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
        case 408: "Request Timeout"
        case 409: "Conflict"
        case 413: "Content Too Large"
        case 415: "Unsupported Media Type"
        case 429: "Too Many Requests"
        case 500: "Internal Server Error"
        case 503: "Service Unavailable"
        default: "Error"
        }
    }
}

/// JSON bodies of the API: flat objects of strings, integers and booleans, written directly
/// (members in the given order).
enum JSONBody {
    static func encode(_ members: [(String, any Sendable)]) -> [UInt8] {
        JSONText.bytes(.object(members))
    }

    static func response(_ members: [(String, any Sendable)], status: Int = 200, headers: [HTTPHeader] = []) -> HTTPResponse {
        response(.object(members), status: status, headers: headers)
    }

    /// The answer of a hot path (introspection): `object` typed already, so no member is cast
    /// from `any Sendable` at run time (no change in introspection's rate the benchmark's noise
    /// lets one see, docs/BENCHMARKS.md; kept as the typed form).
    static func response(_ object: JSONValue, status: Int = 200, headers: [HTTPHeader] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: headers.isEmpty ? jsonHeaders : jsonHeaders + headers, body: JSONText.bytes(object))
    }

    /// Every JSON answer's headers, made once.
    private static let jsonHeaders = [
        HTTPHeader(name: "Content-Type", value: "application/json"), HTTPHeader(name: "Cache-Control", value: "no-store"),
    ]
}
