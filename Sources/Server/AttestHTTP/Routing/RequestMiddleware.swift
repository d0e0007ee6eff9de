import AttestCrypto
import AttestHTTPServer
import AttestObservability
import Synchronization

/// Gives every request an ID, sent back as `X-Request-Id`: a trusted proxy's (nginx's
/// `$request_id`) when it sent a sane one (1 to 64 of A-Z a-z 0-9 . _ -), so both logs correlate;
/// otherwise attestd's own. A client's own `X-Request-Id` is never adopted: it could forge
/// another request's ID in the logs (review L9).
struct RequestIDs: RouterMiddleware {
    private let counter = RequestCounter()
    private let proxies: [IPNetwork]

    init(trustedProxies: [String]) {
        proxies = trustedProxies.compactMap(IPNetwork.init)
    }

    func prepare(_ context: inout RequestContext) throws(Problem) {
        let peer = context.request.remoteAddress
        let trusted = proxies.contains { $0.contains(peer) }
        context.requestID = (trusted ? RequestCounter.forwarded(context.request.header("X-Request-Id")) : nil) ?? counter.next()
    }

    func complete(_ response: inout HTTPResponse, _ context: RequestContext) {
        response.headers.append(HTTPHeader(name: "X-Request-Id", value: context.requestID))
    }
}

/// The client's address for limits and logs: the TCP peer, or what a trusted proxy forwarded.
/// Warns once when a proxy on this host forwards requests that attestd does not trust it for:
/// then every client shares the proxy's rate-limit bucket.
struct ClientAddresses: RouterMiddleware {
    private let addresses: ClientAddress
    private let limitsPerAddress: Bool
    private let logger: Logger
    private let warned = OnceFlag()

    init(trustedProxies: [String], limitsPerAddress: Bool, logger: Logger) {
        addresses = ClientAddress(trustedProxies: trustedProxies.compactMap(IPNetwork.init))
        self.limitsPerAddress = limitsPerAddress
        self.logger = logger
    }

    func prepare(_ context: inout RequestContext) throws(Problem) {
        let request = context.request
        let forwarded = request.headerValues("X-Forwarded-For")
        let address = addresses.of(peer: request.remoteAddress, forwardedFor: forwarded)
        if limitsPerAddress, !forwarded.isEmpty, address == request.remoteAddress, ["127.0.0.1", "::1"].contains(request.remoteAddress),
            warned.setFirstTime()
        {
            logger.log(
                .warning,
                "requests arrive through a proxy on this host (X-Forwarded-For) while --address-rate limits per address: every client "
                    + "shares the proxy's bucket; run with --address-rate 0 (and limit at the proxy) or --trusted-proxy \(request.remoteAddress)",
                ["remote": .string(request.remoteAddress)])
        }
        context.client = address
        context.viaTLS = addresses.viaTLS(peer: request.remoteAddress, forwardedProto: request.headerValues("X-Forwarded-Proto"))
    }
}

/// Counts every response in the metrics and writes its log line: one per request (probes and
/// scrapes only when they fail; successful gateway checks one in `logSuccessEvery`), and for a
/// storage or internal failure its own line and count.
struct ObservedRequests: RouterMiddleware {
    let metrics: Metrics
    let logger: Logger
    /// One in N successful authorize and introspect lines is logged (1: all, 0: none).
    let logSuccessEvery: Int
    /// Routes whose successful requests are sampled by `logSuccessEvery`.
    let sampledRoutes: Set<String>
    private let successes = RequestCounter()
    /// Error lines (5xx requests and their causes) held to one per kind and interval.
    private let repeated: RepeatedLines

    init(metrics: Metrics, logger: Logger, logSuccessEvery: Int, sampledRoutes: Set<String>, repeated: RepeatedLines = RepeatedLines()) {
        (self.metrics, self.logger, self.logSuccessEvery, self.sampledRoutes) = (metrics, logger, logSuccessEvery, sampledRoutes)
        self.repeated = repeated
    }

    func complete(_ response: inout HTTPResponse, _ context: RequestContext) {
        if let problem = context.problem, let internalReason = problem.internalReason {
            metrics.recordStorageError(problem.subcode.identifier)
            let message = problem.code == .service(.storageUnavailable) ? "storage unavailable" : "internal error"
            if let heldBack = repeated.admit("\(message) \(internalReason)") {
                logger.log(.error, message, ["detail": .string(internalReason), "repeated": .int(heldBack)])
            }
        }
        let elapsed = ContinuousClock.now - context.started
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        metrics.recordRequest(route: context.routeName, status: response.status, seconds: seconds)
        guard (!context.isQuiet || response.status >= 500) && logs(context.routeName, response.status) else { return }
        let log = context.log
        var fields: [(String, LogValue)] = []
        fields.reserveCapacity(11)  // room for every field below: the array is not regrown as they are added
        fields += [
            ("request.id", .string(context.requestID)), ("route", .string(context.routeName)), ("status", .int(response.status)),
            ("duration_ms", .double((seconds * 1e6).rounded() / 1e3)), ("outcome", .string(log.outcome ?? "ok")),
        ]
        if let clientID = log.clientID { fields.append(("client.id", .string(clientID))) }
        if let actor = log.actor { fields.append(("actor", .string(actor))) }
        if let prefix = log.tokenHashPrefix { fields.append(("token.sha256_prefix", .string(prefix))) }
        if let keyID = log.keyID { fields.append(("device.key_id", .string(keyID))) }
        fields.append(("remote", .string(context.client)))
        if response.status >= 500 {
            // A failing dependency fails every request alike: one line per route, status and
            // outcome per interval, with the count held back.
            guard let heldBack = repeated.admit("request \(context.routeName) \(response.status) \(log.outcome ?? "")") else { return }
            fields.append(("repeated", .int(heldBack)))
        }
        // The access log: the line may wait a moment to be written with others (BlockBufferedSink).
        logger.log(response.status >= 400 ? .warning : .info, "request", fields: fields, batched: true)
    }

    /// Whether this request's line is written: every failure is; successful gateway checks (the
    /// bulk of a busy gateway's traffic) only one in `logSuccessEvery`.
    private func logs(_ route: String, _ status: Int) -> Bool {
        guard status < 400, sampledRoutes.contains(route), logSuccessEvery != 1 else { return true }
        guard logSuccessEvery > 0 else { return false }
        return successes.count() % UInt64(logSuccessEvery) == 0
    }
}

/// A flag that is set once: `setFirstTime` is true for the first caller only.
final class OnceFlag: Sendable {
    private let flag = Atomic<Bool>(false)
    func setFirstTime() -> Bool { !flag.exchange(true, ordering: .relaxed) }
}

/// Request IDs: a per-process random prefix and a counter (unique, cheap, and not secret).
final class RequestCounter: Sendable {
    private let prefix: String
    private let counter = Atomic<UInt64>(0)

    init() {
        prefix = Hex.encode((try? SecureRandom.bytes(4)) ?? [0, 0, 0, 0])
    }

    func next() -> String {
        "\(prefix)-\(count())"
    }

    /// The next number (from 1).
    func count() -> UInt64 { counter.wrappingAdd(1, ordering: .relaxed).newValue }

    /// A request ID from a proxy, when it is 1 to 64 of A-Z a-z 0-9 . _ - (nginx's `$request_id` is
    /// 32 hex digits); nil for anything else, which then gets attestd's own.
    static func forwarded(_ value: String?) -> String? {
        guard let value, (1...64).contains(value.utf8.count),
            value.utf8.allSatisfy({ byte in
                (0x30...0x39).contains(byte) || (0x41...0x5A).contains(byte) || (0x61...0x7A).contains(byte) || byte == 0x2E || byte == 0x5F
                    || byte == 0x2D
            })
        else { return nil }
        return value
    }
}
