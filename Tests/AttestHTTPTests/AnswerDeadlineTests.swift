import AttestHTTPServer
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AttestHTTP

/// A lookup's answer has a deadline: a lookup waiting for a database that stopped answering
/// holds no worker, so nothing else would bound its client's wait. An offloaded handler's
/// answer has none of the router's (its own statements' timeouts bound it).
@Suite("Router: the deadline of lookups")
struct AnswerDeadlineTests {
    /// The answers `/late` has not given yet: given when the test says, so a late answer comes
    /// after the deadline's 503 whatever the machine's load.
    final class HeldAnswers: Sendable {
        private let answers = Mutex<[@Sendable () -> Void]>([])
        private let given = DispatchSemaphore(value: 0)
        func hold(_ answer: @escaping @Sendable () -> Void) { answers.withLock { $0.append(answer) } }
        func giveAll() {
            for answer in answers.withLock({ $0 }) { answer() }
            given.signal()
        }
        /// Blocks an offloaded handler until `giveAll` (at most 10 s).
        func waitUntilGiven() {
            _ = given.wait(timeout: .now() + .seconds(10))
            given.signal()
        }
    }

    /// A router whose `/never` route never answers and whose `/late` route answers when the test
    /// gives `late`'s answers, with a deadline of 300 ms.
    static func router(late: HeldAnswers = HeldAnswers()) -> Router {
        let builder = RouterBuilder()
        builder.root.add("GET", "/never", name: "never", .lookup { _, _ in })
        builder.root.add("GET", "/late", name: "late", .lookup { _, reply in late.hold { reply { _ in HTTPResponse(status: 200) } } })
        builder.root.offload("GET", "/write", name: "write") { _ in
            late.waitUntilGiven()
            return HTTPResponse(status: 200)
        }
        builder.root.add("GET", "/soon", name: "soon", .lookup { _, reply in reply { _ in HTTPResponse(status: 200) } })
        return builder.router(middleware: [], answerDeadline: .milliseconds(300))
    }

    /// The router's answer, or nil when it has not come within `seconds` (it is left waiting).
    static func respond(_ router: Router, _ request: HTTPRequest, within seconds: Int) -> HTTPResponse? {
        let answered = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        // A thread of its own: the router's wait blocks it.
        Thread {
            let response = router.respond(to: request)
            answered.withLock { $0 = response }
            done.signal()
        }.start()
        guard done.wait(timeout: .now() + .seconds(seconds)) == .success else { return nil }
        return answered.withLock { $0 }
    }

    @Test("an answer that has not come by the deadline is 503 storage_unavailable with Retry-After")
    func expires() {
        let router = Self.router()
        let started = ContinuousClock.now
        guard let response = Self.respond(router, HTTPRequest(method: "GET", path: "/never"), within: 5) else {
            Issue.record("no answer within 5 s")
            return
        }
        let elapsed = ContinuousClock.now - started
        #expect(response.status == 503)
        #expect(response.headers.contains(HTTPHeader(name: "Retry-After", value: "1")))
        #expect(String(decoding: response.body, as: UTF8.self).contains(#""code":"storage_unavailable""#))
        #expect(elapsed >= .milliseconds(300) && elapsed < .seconds(2), "\(elapsed)")
        #expect(router.answerDeadlines.pendingCount == 0)
    }

    @Test("the route's answer after the deadline changes nothing; answers in time leave no deadline pending")
    func lateAndTimelyAnswers() {
        let late = HeldAnswers()
        let router = Self.router(late: late)
        #expect(Self.respond(router, HTTPRequest(method: "GET", path: "/late"), within: 5)?.status == 503)
        late.giveAll()
        for _ in 0..<100 { #expect(router.respond(to: HTTPRequest(method: "GET", path: "/soon")).status == 200) }
        #expect(router.answerDeadlines.pendingCount == 0)
    }

    @Test("an offloaded handler's answer has no deadline of the router's")
    func writesWaitForTheirOwnAnswer() {
        let late = HeldAnswers()
        let router = Self.router(late: late)
        let answered = Mutex<HTTPResponse?>(nil)
        let done = DispatchSemaphore(value: 0)
        Thread {
            let response = router.respond(to: HTTPRequest(method: "GET", path: "/write"))
            answered.withLock { $0 = response }
            done.signal()
        }.start()
        // Three times the router's deadline: the answer is still the route's to give.
        #expect(done.wait(timeout: .now() + .milliseconds(900)) == .timedOut)
        #expect(router.answerDeadlines.pendingCount == 0)
        late.giveAll()
        #expect(done.wait(timeout: .now() + .seconds(5)) == .success)
        let response = answered.withLock { $0 }
        #expect(response?.status == 200)
    }
}
