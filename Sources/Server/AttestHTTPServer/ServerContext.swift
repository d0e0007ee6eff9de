import Synchronization

/// What libmicrohttpd's threads need from the server, reached through the callbacks' `cls` pointer.
///
/// `HTTPServer` holds the only strong reference and passes it unretained to MHD; it stops the daemon
/// (so no callback can run again) before it lets go. Sendable: every stored property is immutable
/// or atomic.
final class ServerContext: Sendable {
    let responder: any HTTPResponder
    let maximumBodyBytes: Int
    /// Requests whose request line MHD has read and whose completed callback has not run yet.
    let activeRequests = Atomic<Int>(0)
    /// Set when `stop()` begins: responses from then on carry `Connection: close`, so keep-alive
    /// clients leave instead of starting another request on a daemon that is draining.
    let isStopping = Atomic<Bool>(false)
    /// The absolute deadline of every request's headers and body.
    let deadlines: RequestDeadlines
    /// Open connections per client address, and the cap on them.
    let addresses: ConnectionsPerAddress
    /// Connections suspended until their deferred answer comes.
    let parked = ParkedConnections()
    /// The answer to the first request on a connection over its address's cap.
    let overCapResponse: HTTPResponse

    init(
        responder: any HTTPResponder, maximumBodyBytes: Int, requestDeadline: Duration, addresses: ConnectionsPerAddress,
        overCapResponse: HTTPResponse
    ) {
        self.responder = responder
        self.overCapResponse = overCapResponse
        self.maximumBodyBytes = maximumBodyBytes
        deadlines = RequestDeadlines(limit: requestDeadline)
        self.addresses = addresses
    }
}

/// One request's state between libmicrohttpd's callbacks, carried in `req_cls`.
///
/// Made in the URI log callback, released in the completed callback, which MHD runs for every request
/// it announced, including ones the client abandons mid-body. Not Sendable, and needs no lock: MHD
/// hands a connection to exactly one worker thread, which makes every call for its requests.
final class RequestState {
    /// The request target exactly as received, before MHD percent-decodes its copy.
    let target: String
    /// Whether the first access-handler call (headers complete, no body yet) has happened.
    var headersProcessed = false
    var headers: [HTTPHeader] = []
    var remoteAddress = ""
    var body: [UInt8] = []
    /// Body bytes dropped after the body crossed the limit; non-zero means the answer is 413.
    var discardedBytes = 0
    /// Set while the connection is parked for this request's deferred answer.
    var deferred: DeferredResponse?

    init(target: String) {
        self.target = target
    }
}

/// Open connections per client address: the cap that keeps one address from taking the server
/// (libmicrohttpd has one too, but refuses in silence; this one answers, counts and reports each refusal).
///
/// As nginx's `limit_conn`, a connection over the cap is answered rather than reset: it is kept, and
/// its first request gets the server's over-cap answer (503 with `Retry-After`) and the connection is
/// closed. Only past twice the cap is a connection closed at accept with no answer, so an address
/// cannot hold more than that many descriptors. A connection is counted when MHD reports it open and
/// uncounted when it reports it closed. Two accepts of one address on two threads at the same instant
/// can both pass the accept check, so the hard bound can be exceeded by at most the number of threads.
final class ConnectionsPerAddress: Sendable {
    let limit: Int
    private let open = Mutex<[String: Int]>([:])
    let refused = Atomic<Int>(0)
    private let onRefusal: (@Sendable (String) -> Void)?
    private let uncapped: (@Sendable (String) -> Bool)?

    init(limit: Int, uncapped: (@Sendable (String) -> Bool)? = nil, onRefusal: (@Sendable (String) -> Void)?) {
        self.limit = limit
        self.uncapped = uncapped
        self.onRefusal = onRefusal
    }

    /// Whether connections from `address` are counted at all.
    private func caps(_ address: String) -> Bool { limit > 0 && uncapped?(address) != true }

    /// Whether libmicrohttpd should keep a connection from `address` at all (under twice the cap).
    func admits(_ address: String) -> Bool {
        guard caps(address) else { return true }
        let admitted = open.withLock { ($0[address] ?? 0) < 2 * limit }
        if !admitted { refuse(address) }
        return admitted
    }

    /// Counts a connection MHD kept; true when it is over the cap and its first request is to be refused.
    func opened(_ address: String) -> Bool {
        guard caps(address) else { return false }
        let count = open.withLock { table in
            table[address, default: 0] += 1
            return table[address] ?? 0
        }
        guard count > limit else { return false }
        refuse(address)
        return true
    }

    func closed(_ address: String) {
        guard caps(address) else { return }
        open.withLock { table in
            let count = (table[address] ?? 1) - 1
            table[address] = count > 0 ? count : nil
        }
    }

    /// Connections open from `address` now (for tests).
    func openCount(_ address: String) -> Int { open.withLock { $0[address] ?? 0 } }

    private func refuse(_ address: String) {
        refused.add(1, ordering: .relaxed)
        onRefusal?(address)
    }
}
