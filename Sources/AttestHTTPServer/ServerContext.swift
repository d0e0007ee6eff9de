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

    init(responder: any HTTPResponder, maximumBodyBytes: Int, requestDeadline: Duration) {
        self.responder = responder
        self.maximumBodyBytes = maximumBodyBytes
        deadlines = RequestDeadlines(limit: requestDeadline)
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

    init(target: String) {
        self.target = target
    }
}
