package import AttestHTTPServer
import Dispatch
import Synchronization

/// How a route answers.
enum RouteAnswer: Sendable {
    /// Builds a response from the request's context (on the connection's worker).
    typealias Build = @Sendable (inout RequestContext) throws(Problem) -> HTTPResponse
    /// Hands the builder of the response back, once, from any thread.
    typealias Reply = @Sendable (@escaping Build) -> Void

    /// At once, on the worker.
    case now(Build)
    /// After work that must not hold a worker (a PostgreSQL round trip, a durable commit): the
    /// closure checks the request (it may note what the log line says, in the context) and starts
    /// the work, which calls `reply` exactly once with the builder of the response. The worker
    /// serves other connections meanwhile; the builder runs on it again.
    case later(Start, deadline: LaterDeadline = .router)

    typealias Start = @Sendable (inout RequestContext, _ reply: @escaping Reply) throws(Problem) -> Void

    /// How long a later answer may take.
    enum LaterDeadline: Sendable {
        /// The router's: past it, 503 `storage_unavailable` (a lookup, which changes nothing).
        case router
        /// None of the router's: the work's own timeouts bound it (a durable write, whose
        /// outcome a 503 could not tell the client, or a challenge's insert). Such work is not
        /// started once the server is stopping, and a stop waits for the answer of work it
        /// started (`DeferredResponse.reserve`).
        case storesOwn
    }
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
    /// The deadline of answers given later.
    let answerDeadlines: AnswerDeadlines

    init(routes: [Route], middleware: [any RouterMiddleware], answerDeadline: Duration) {
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
        answerDeadlines = AnswerDeadlines(limit: answerDeadline)
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
    /// `reserve` is asked before a durable write starts (`DeferredResponse.reserve`).
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
            case .now(let build):
                let response = try build(&context)
                let finished = finish(response, context, applied)
                complete { finished }
            case .later(let start, let deadline):
                let chain = applied
                // A write is not started once the server is stopping: its answer could not wait.
                guard deadline == .router || reserve() else {
                    let finished = finish(DeferredResponse.stopping, context, chain)
                    return complete { finished }
                }
                // The context as the start left it, read by the builder: it runs on the worker
                // after `answer` has returned (`DeferredResponse`, `WaitingAnswer`).
                let started = Mutex(context)
                let pending = PendingAnswer(deadlines: deadline == .router ? answerDeadlines : nil) { build in
                    complete {
                        var context = started.withLock { $0 }
                        let response: HTTPResponse
                        do throws(Problem) {
                            response = try build(&context)
                        } catch {
                            response = Self.refuse(error, &context)
                        }
                        return finish(response, context, chain)
                    }
                }
                try start(&context) { build in pending.reply(build) }
                started.withLock { $0 = context }
                pending.startDeadline()
            }
        } catch {
            let response = Self.refuse(error, &context)
            let finished = finish(response, context, applied)
            complete { finished }
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
