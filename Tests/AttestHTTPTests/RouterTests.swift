import AttestHTTPServer
import Dispatch
import Synchronization
import Testing

@testable import AttestHTTP

/// The router on its own: patterns, methods, middleware order, answers given later.
@Suite("Router")
struct RouterTests {
    @Test(
        "patterns match literal segments, {parameters} of one non-empty segment, and a trailing {rest...}",
        arguments: [
            ("/v1/challenge", "/v1/challenge", [:]),
            ("/admin/v1/integrations/{client_id}/revoke", "/admin/v1/integrations/clid_1/revoke", ["client_id": "clid_1"]),
            ("/console/{path...}", "/console/", ["path": ""]),
            ("/console/{path...}", "/console/js/app.js", ["path": "js/app.js"]),
        ] as [(String, String, [String: String])])
    func matches(_ pattern: String, _ path: String, _ parameters: [String: String]) {
        #expect(PathPattern(pattern).match(path) == parameters)
    }

    @Test(
        "patterns refuse other paths",
        arguments: [
            ("/v1/challenge", "/v1/challenge/"), ("/v1/challenge", "/v1"), ("/v1/challenge", "v1/challenge"),
            ("/admin/v1/integrations/{client_id}/revoke", "/admin/v1/integrations//revoke"),
            ("/admin/v1/integrations/{client_id}", "/admin/v1/integrations/a/b"), ("/console/{path...}", "/console"),
        ])
    func refuses(_ pattern: String, _ path: String) {
        #expect(PathPattern(pattern).match(path) == nil)
    }

    /// What ran, in order.
    final class Trace: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
        var all: [String] { lines.withLock { $0 } }
    }

    /// Records the order in which middleware ran.
    struct Tracing: RouterMiddleware {
        let name: String
        let trace: Trace

        func prepare(_ context: inout RequestContext) throws(Problem) {
            trace.append("prepare \(name)")
        }

        func complete(_ response: inout HTTPResponse, _ context: RequestContext) {
            trace.append("complete \(name)")
            response.headers.append(HTTPHeader(name: "X-Trace", value: name))
        }
    }

    /// Refuses every request.
    struct Refusing: RouterMiddleware {
        func prepare(_ context: inout RequestContext) throws(Problem) {
            throw Problem(.unauthorized, .gatewaySecret, "no")
        }
    }

    static func router(_ trace: Trace = Trace()) -> Router {
        let builder = RouterBuilder()
        let admin = builder.root.group("/admin/v1", middleware: [Tracing(name: "group", trace: trace)])
        admin.on("GET", "/things/{id}", name: "thing") { context throws(Problem) in
            HTTPResponse(status: 200, body: Array(context.parameter("id").utf8))
        }
        admin.on("POST", "/things/{id}", name: "thing_update") { _ throws(Problem) in HTTPResponse(status: 204) }
        builder.root.group("", middleware: [Refusing()]).on("GET", "/closed", name: "closed") { _ throws(Problem) in
            HTTPResponse(status: 200)
        }
        builder.root.add(
            "GET", "/later", name: "later",
            .lookup { _, reply in
                DispatchQueue.global().async { reply { _ in HTTPResponse(status: 202) } }
            })
        return builder.router(middleware: [Tracing(name: "outer", trace: trace)])
    }

    @Test("middleware prepares outside in and completes inside out; a path parameter reaches the handler")
    func middlewareOrder() {
        let trace = Trace()
        let response = Self.router(trace).respond(to: HTTPRequest(method: "GET", path: "/admin/v1/things/42"))
        #expect(response.status == 200)
        #expect(response.body == Array("42".utf8))
        #expect(trace.all == ["prepare outer", "prepare group", "complete group", "complete outer"])
        #expect(response.headers.filter { $0.name == "X-Trace" }.map { $0.value } == ["group", "outer"])
    }

    @Test("404 for an unknown path and 405 with every allowed method, both through the outer middleware only; HEAD is GET")
    func notFoundAndMethods() {
        let trace = Trace()
        let router = Self.router(trace)
        #expect(router.respond(to: HTTPRequest(method: "GET", path: "/nothing")).status == 404)
        let wrong = router.respond(to: HTTPRequest(method: "DELETE", path: "/admin/v1/things/1"))
        #expect(wrong.status == 405)
        #expect(wrong.headers.contains(HTTPHeader(name: "Allow", value: "GET, POST")))
        #expect(!trace.all.contains("prepare group"))
        #expect(router.respond(to: HTTPRequest(method: "HEAD", path: "/admin/v1/things/1")).status == 200)
    }

    @Test("routes with and without parameters on one path are tried in the order they were registered")
    func registrationOrder() {
        let builder = RouterBuilder()
        let group = builder.root.group("/x")
        group.on("GET", "/fixed", name: "fixed first") { _ throws(Problem) in HTTPResponse(status: 201) }
        group.on("GET", "/{id}", name: "parameter") { _ throws(Problem) in HTTPResponse(status: 202) }
        group.on("POST", "/{id}", name: "parameter post") { _ throws(Problem) in HTTPResponse(status: 203) }
        group.on("GET", "/late", name: "fixed after") { _ throws(Problem) in HTTPResponse(status: 204) }
        group.on("DELETE", "/late", name: "fixed delete") { _ throws(Problem) in HTTPResponse(status: 205) }
        let router = builder.router(middleware: [])
        #expect(router.respond(to: HTTPRequest(method: "GET", path: "/x/fixed")).status == 201)
        #expect(router.respond(to: HTTPRequest(method: "GET", path: "/x/late")).status == 202, "the earlier pattern wins")
        #expect(router.respond(to: HTTPRequest(method: "DELETE", path: "/x/late")).status == 205)
        #expect(router.respond(to: HTTPRequest(method: "POST", path: "/x/fixed")).status == 203)
        let wrong = router.respond(to: HTTPRequest(method: "PUT", path: "/x/late"))
        #expect(wrong.headers.contains(HTTPHeader(name: "Allow", value: "GET, POST, DELETE")))
        #expect(router.respond(to: HTTPRequest(method: "GET", path: "/x/fixed/")).status == 404)
    }

    @Test("a route's middleware can refuse the request before its handler runs")
    func refusal() {
        let response = Self.router().respond(to: HTTPRequest(method: "GET", path: "/closed"))
        #expect(response.status == 401)
    }

    @Test("an answer given later from another thread is awaited by respond(to:)")
    func later() {
        #expect(Self.router().respond(to: HTTPRequest(method: "GET", path: "/later")).status == 202)
    }
}
