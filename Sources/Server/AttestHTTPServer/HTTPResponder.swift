/// Turns a complete request into a response; called on libmicrohttpd's worker threads, concurrently.
///
/// `respond(to:)` runs synchronously on a pool thread, so it must not block for long: each blocked
/// call holds one of `Configuration.threads` workers and every connection that worker owns. A
/// responder whose answer waits for a round trip implements `respond(to:answer:)` instead and
/// completes the answer when it has it; the worker serves other connections meanwhile.
package protocol HTTPResponder: Sendable {
    /// Answers one request.
    func respond(to request: HTTPRequest) -> HTTPResponse
    /// Answers one request through `answer`, now or later from any thread.
    func respond(to request: HTTPRequest, answer: DeferredResponse)
}

extension HTTPResponder {
    /// Answers at once, with `respond(to:)`.
    package func respond(to request: HTTPRequest, answer: DeferredResponse) {
        let response = respond(to: request)
        answer.complete { response }
    }
}
