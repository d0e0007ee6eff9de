import AttestClock
import AttestHTTPServer

/// Work done around a request, as hummingbird's middleware: request IDs, client addresses,
/// authentication, metrics and the log line. `prepare` runs before the route's answer (throwing
/// refuses the request); `complete` runs on the response before it is sent, in reverse order.
protocol RouterMiddleware: Sendable {
    func prepare(_ context: inout RequestContext) throws(Problem)
    func complete(_ response: inout HTTPResponse, _ context: RequestContext)
}

extension RouterMiddleware {
    func prepare(_ context: inout RequestContext) throws(Problem) {}
    func complete(_ response: inout HTTPResponse, _ context: RequestContext) {}
}

/// Declares routes at start: groups share a path prefix and middleware (hummingbird's
/// `RouterGroup`); `router(middleware:)` freezes them into a `Router`.
final class RouterBuilder {
    private var routes: [Route] = []

    init() {}

    /// The root group: no prefix, no middleware.
    var root: RouteGroup { RouteGroup(builder: self, prefix: "", middleware: []) }

    fileprivate func add(_ route: Route) {
        routes.append(route)
    }

    /// The router, with `middleware` around every request (also those no route matches); a
    /// lookup whose answer has not come within `answerDeadline` is 503 `storage_unavailable`;
    /// offloaded handlers run on up to `offloadThreads` threads; deadlines are measured on `clock`.
    func router(
        middleware: [any RouterMiddleware], answerDeadline: Duration = .seconds(5), offloadThreads: Int = 8,
        clock: any TimerClock = SystemTimerClock()
    ) -> Router {
        Router(routes: routes, middleware: middleware, answerDeadline: answerDeadline, offloadThreads: offloadThreads, clock: clock)
    }
}

/// Routes under one prefix with the same middleware.
struct RouteGroup {
    fileprivate let builder: RouterBuilder
    let prefix: String
    let middleware: [any RouterMiddleware]

    /// A group below this one: its prefix appended, its middleware after this group's.
    func group(_ prefix: String, middleware more: [any RouterMiddleware] = []) -> RouteGroup {
        RouteGroup(builder: builder, prefix: self.prefix + prefix, middleware: middleware + more)
    }

    /// A route answered at once, on the HTTP worker.
    func on(_ method: String, _ path: String, name: String, quiet: Bool = false, _ handler: @escaping RouteAnswer.Handler) {
        add(method, path, name: name, quiet: quiet, .now(handler))
    }

    /// A route answered from the offload threads (`RouteAnswer.offload`).
    func offload(_ method: String, _ path: String, name: String, _ handler: @escaping RouteAnswer.Handler) {
        add(method, path, name: name, .offload(handler))
    }

    /// A route of any answer.
    func add(_ method: String, _ path: String, name: String, quiet: Bool = false, _ answer: RouteAnswer) {
        builder.add(
            Route(method: method, pattern: PathPattern(prefix + path), name: name, isQuiet: quiet, middleware: middleware, answer: answer))
    }
}
