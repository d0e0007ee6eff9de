import AttestClock
package import AttestHTTPServer
import AttestService
import Dispatch
import Synchronization

/// How a route answers. A handler reads the request from the context (and notes what the log
/// line says there) and returns the response; it may throw a `Problem` or the service's
/// `ServiceError`, which the router maps once (`Problem.answering`).
enum RouteAnswer: Sendable {
    typealias Handler = @Sendable (inout RequestContext) throws -> HTTPResponse

    /// At once, on the HTTP worker: work that waits for no store statement.
    case now(Handler)
    /// On the edge's offload threads (`WriteWaiters`), answered when the handler returns: work
    /// that waits for the store (a verification and its durable write, a challenge's insert, a
    /// revocation). The worker serves other connections meanwhile. Not started once the server
    /// is stopping; a stop waits for the answer of work it started (`DeferredResponse.reserve`).
    case offload(Handler)
    /// A gateway token check: `Lookup` starts the store's lookup, which answers through a
    /// callback (on PostgreSQL a pipelined round trip, docs/decisions/0005-offload-seam.md) with
    /// the handler of the response, run on the worker. Past the router's deadline the answer is
    /// 503 `storage_unavailable`.
    case lookup(Lookup)

    typealias Lookup = @Sendable (inout RequestContext, _ reply: @escaping @Sendable (@escaping Handler) -> Void) throws -> Void
}

/// One endpoint: method, path pattern, name in metrics and logs, its own middleware, its answer.
struct Route: Sendable {
    let method: String
    let pattern: PathPattern
    let name: String
    /// Successful requests are not logged one line each (probes and scrapes).
    let isQuiet: Bool
    /// Run after the router-wide middleware, for this route only (authentication).
    let middleware: [any RouterMiddleware]
    let answer: RouteAnswer
}

/// The HTTP API as a responder: router-wide middleware around every request, then the route the
/// path and method select (404 when no pattern matches, 405 with `Allow` when the method does not),
/// its middleware and its answer. HEAD is served wherever GET is.
///
/// Built once at start (`RouterBuilder`); tests call `respond(to:)` without a socket.
package struct Router: HTTPResponder {
    private let routes: [Route]
    /// The positions in `routes` of the routes without parameters, by their path: most requests
    /// find their route here with one hash lookup instead of splitting the path per route.
    private let literalRoutes: [String: [Int]]
    /// The positions in `routes` of the routes with parameters, in order.
    private let patternRoutes: [Int]
    private let middleware: [any RouterMiddleware]
    /// The deadline of lookups.
    let answerDeadlines: AnswerDeadlines
    /// Where offloaded handlers run.
    let waiters: WriteWaiters

    init(
        routes: [Route], middleware: [any RouterMiddleware], answerDeadline: Duration, offloadThreads: Int,
        clock: any TimerClock = SystemTimerClock()
    ) {
        self.routes = routes
        var literalRoutes: [String: [Int]] = [:]
        var patternRoutes: [Int] = []
        for (index, route) in routes.enumerated() {
            if let path = route.pattern.literalPath {
                literalRoutes[path, default: []].append(index)
            } else {
                patternRoutes.append(index)
            }
        }
        self.literalRoutes = literalRoutes
        self.patternRoutes = patternRoutes
        self.middleware = middleware
        answerDeadlines = AnswerDeadlines(limit: answerDeadline, clock: clock)
        waiters = WriteWaiters(limit: offloadThreads, clock: clock)
    }

    /// After the HTTP server has stopped: withdraws the offloaded work still queued, waits for
    /// the running work (a write is never cut short). The store is closed after it.
    package func stop() {
        waiters.stop()
    }

    /// Answers one request, waiting for a route that answers later (tests, and callers without
    /// a server).
    package func respond(to request: HTTPRequest) -> HTTPResponse {
        let waiting = WaitingAnswer()
        answer(request, reserve: { true }) { finish in waiting.complete(finish) }
        return waiting.wait()
    }

    /// Answers one request through `answer`; a route that answers later parks the connection.
    package func respond(to request: HTTPRequest, answer deferred: DeferredResponse) {
        answer(request, reserve: { deferred.reserve() }) { finish in deferred.complete(finish) }
    }

    /// Runs the request through middleware and route; `complete` gets the response's builder once.
    /// `reserve` is asked before offloaded work starts (`DeferredResponse.reserve`).
    private func answer(
        _ request: HTTPRequest, reserve: () -> Bool, complete: @escaping @Sendable (@escaping DeferredResponse.Finish) -> Void
    ) {
        var context = RequestContext(request: request)
        var applied = middleware
        do throws(Problem) {
            for item in middleware { try item.prepare(&context) }
            let route = try select(&context)
            applied += route.middleware
            for item in route.middleware { try item.prepare(&context) }
            switch route.answer {
            case .now(let handler):
                let finished = finish(Self.handle(handler, &context), context, applied)
                complete { finished }
            case .offload(let handler):
                offload(handler, context, applied, reserve: reserve, complete: complete)
            case .lookup(let lookup):
                try look(lookup, &context, applied, complete: complete)
            }
        } catch {
            let finished = finish(Self.refuse(error, &context), context, applied)
            complete { finished }
        }
    }

    /// Runs `handler` on the offload threads and completes with its response there. A stopping
    /// server starts nothing (503 at once); work withdrawn by `stop` before it ran is answered
    /// `storage_unavailable`.
    private func offload(
        _ handler: @escaping RouteAnswer.Handler, _ context: RequestContext, _ chain: [any RouterMiddleware], reserve: () -> Bool,
        complete: @escaping @Sendable (@escaping DeferredResponse.Finish) -> Void
    ) {
        guard reserve() else {
            let finished = finish(DeferredResponse.stopping, context, chain)
            return complete { finished }
        }
        waiters.run(
            {
                var handled = context
                let finished = finish(Self.handle(handler, &handled), handled, chain)
                complete { finished }
            },
            withdrawn: {
                var refused = context
                let finished = finish(Self.refuse(Problem(ServiceError.stopping), &refused), refused, chain)
                complete { finished }
            })
    }

    /// Starts a lookup; its handler runs on the worker when the store answers, or the deadline's.
    private func look(
        _ lookup: RouteAnswer.Lookup, _ context: inout RequestContext, _ chain: [any RouterMiddleware],
        complete: @escaping @Sendable (@escaping DeferredResponse.Finish) -> Void
    ) throws(Problem) {
        // The context as the lookup's start left it, read by the handler: it runs on the worker
        // after `answer` has returned (`DeferredResponse`, `WaitingAnswer`).
        let started = Mutex(context)
        let pending = PendingAnswer(deadlines: answerDeadlines) { handler in
            complete {
                var context = started.withLock { $0 }
                return finish(Self.handle(handler, &context), context, chain)
            }
        }
        do {
            try lookup(&context) { handler in pending.reply(handler) }
        } catch {
            throw Problem.answering(error)
        }
        started.withLock { $0 = context }
        pending.startDeadline()
    }

    /// The handler's response, or its refusal's.
    private static func handle(_ handler: RouteAnswer.Handler, _ context: inout RequestContext) -> HTTPResponse {
        do {
            return try handler(&context)
        } catch {
            return refuse(Problem.answering(error), &context)
        }
    }

    /// The routes whose pattern matches `path`, in the order they were registered (the first whose
    /// method fits wins), each with its parameters.
    private func matches(_ path: String) -> [(route: Route, parameters: [String: String])] {
        var found = (literalRoutes[path] ?? []).map { (index: $0, parameters: [String: String]()) }
        for index in patternRoutes {
            if let parameters = routes[index].pattern.match(path) { found.append((index, parameters)) }
        }
        if !patternRoutes.isEmpty { found.sort { $0.index < $1.index } }
        return found.map { (routes[$0.index], $0.parameters) }
    }

    /// The route for the request's path and method, with its parameters in `context`.
    private func select(_ context: inout RequestContext) throws(Problem) -> Route {
        let request = context.request
        var allowed: [String] = []
        for (route, parameters) in matches(request.path) {
            guard request.method == route.method || (route.method == "GET" && request.method == "HEAD") else {
                if !allowed.contains(route.method) { allowed.append(route.method) }
                continue
            }
            context.routeName = route.name
            context.isQuiet = route.isQuiet
            context.parameters = parameters
            return route
        }
        guard allowed.isEmpty else {
            throw Problem(
                .methodNotAllowed, .methodNotAllowed, "\(request.path) takes \(allowed.joined(separator: ", "))",
                headers: [HTTPHeader(name: "Allow", value: allowed.joined(separator: ", "))])
        }
        throw Problem(.notFound, .notFound, "no such endpoint")
    }

    /// The one place a refusal becomes a response: the problem is kept in the context for the
    /// middleware (the log line's outcome, the storage-error count).
    private static func refuse(_ problem: Problem, _ context: inout RequestContext) -> HTTPResponse {
        context.problem = problem
        context.log.outcome = problem.subcode.identifier
        return problem.response
    }

    /// The response as sent: every middleware's `complete`, the route's first, in reverse order.
    private func finish(_ answered: HTTPResponse, _ context: RequestContext, _ chain: [any RouterMiddleware]) -> HTTPResponse {
        var response = answered
        for item in chain.reversed() { item.complete(&response, context) }
        return response
    }
}

/// A response builder awaited on the calling thread (`Router.respond(to:)`).
private final class WaitingAnswer: Sendable {
    private let finish = Mutex<DeferredResponse.Finish?>(nil)
    private let done = DispatchSemaphore(value: 0)

    func complete(_ build: @escaping DeferredResponse.Finish) {
        finish.withLock { $0 = build }
        done.signal()
    }

    func wait() -> HTTPResponse {
        done.wait()
        return finish.withLock { $0 }?() ?? HTTPResponse(status: 500)
    }
}
