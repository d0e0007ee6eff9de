/// Turns a complete request into a response; called on libmicrohttpd's worker threads, concurrently.
///
/// It runs synchronously on a pool thread, so it must not block for long: each blocked call holds one
/// of `Configuration.threads` workers and every connection that worker owns.
package protocol HTTPResponder: Sendable {
    /// Answers one request.
    func respond(to request: HTTPRequest) -> HTTPResponse
}
