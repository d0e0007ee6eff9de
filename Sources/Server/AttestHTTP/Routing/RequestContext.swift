import AttestHTTPServer
import AttestService

/// One request on its way through the router: what middleware and handlers read and write.
struct RequestContext: Sendable {
    /// The request as received.
    let request: HTTPRequest
    /// When the router took the request (for the latency histogram and the log line).
    let started = ContinuousClock.now
    /// The route's name in metrics and logs (`unknown` until a route matched).
    var routeName = "unknown"
    /// Whether the route's successful requests are logged one line each (probes and scrapes are not).
    var isQuiet = false
    /// Path parameters by name (`{client_id}` in the route's pattern), as sent: not percent-decoded.
    var parameters: [String: String] = [:]
    /// The request ID (a trusted proxy's, or attestd's own), set by `RequestIDs`.
    var requestID = ""
    /// The client's address: the TCP peer, or what a trusted proxy forwarded (`ClientAddresses`).
    var client = ""
    /// Whether the client reached a trusted proxy over TLS (`ClientAddresses`): the console's
    /// cookie is then `Secure`.
    var viaTLS = false
    /// The problem the request was refused with, if any.
    var problem: Problem?
    /// What the log line says besides route and status.
    var log = RequestLogFields()
    /// Who calls the admin API, set by `AdminAuthentication` (nil on every other route).
    var principal: AdminPrincipal?
    /// The console session's secret when the request was authenticated by its cookie.
    var session: String?

    init(request: HTTPRequest) {
        self.request = request
    }

    /// The path parameter `name`; a route only asks for the parameters of its own pattern.
    func parameter(_ name: String) -> String {
        parameters[name] ?? ""
    }
}

/// What a request's log line says besides route and status.
struct RequestLogFields: Sendable {
    /// The client ID as the request gave it (also when malformed, to help whoever reads the log),
    /// cut to 64 bytes: an unbounded one must not make an unbounded log line. The log writer
    /// escapes it; nothing is keyed by it.
    var clientID: String? {
        get { storedClientID }
        set {
            storedClientID = newValue.map {
                $0.utf8.count <= 64 ? $0 : String(decoding: Array($0.utf8.prefix(64)), as: UTF8.self) + "..."
            }
        }
    }
    private var storedClientID: String?
    /// What happened, for the log line: `ok` unless set (a refusal sets its sub-code).
    var outcome: String?
    /// Who acted, for requests authenticated as a person or a key (the admin API).
    var actor: String?
    /// The first hex digits of the SHA-256 of the token a request acted on (`/v1/revoke`).
    var tokenHashPrefix: String?
    /// The device key ID (64 hex digits) an attest or refresh presented, once it decoded.
    var keyID: String?
}
