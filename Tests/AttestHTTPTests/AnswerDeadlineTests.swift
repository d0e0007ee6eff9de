import AttestHTTPServer
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AttestHTTP

/// Answers given later have a deadline (issue 18, M4): a lookup waiting for a database that
/// stopped answering holds no worker, so nothing else would bound its client's wait.
@Suite("Router: the deadline of answers given later")
struct AnswerDeadlineTests {
    /// The answers `/late` has not given yet: given when the test says, so a late answer comes
    /// after the deadline's 503 whatever the machine's load.
    final class HeldAnswers: Sendable {
        private let answers = Mutex<[@Sendable () -> Void]>([])
        func hold(_ answer: @escaping @Sendable () -> Void) { answers.withLock { $0.append(answer) } }
        func giveAll() { for answer in answers.withLock({ $0 }) { answer() } }
    }

    /// A router whose `/never` route never answers and whose `/late` route answers when the test
    /// gives `late`'s answers, with a deadline of 300 ms.
    static func router(late: HeldAnswers = HeldAnswers()) -> Router {
        let builder = RouterBuilder()
        builder.root.add("GET", "/never", name: "never", .later { _, _ throws(Problem) in })
        builder.root.add(
            "GET", "/late", name: "late",
            .later { _, reply throws(Problem) in
                late.hold { reply { _ throws(Problem) in HTTPResponse(status: 200) } }
            })
        builder.root.add(
            "GET", "/write", name: "write",
            .later(
                { context, reply throws(Problem) in
                    context.log.clientID = "clid_noted_by_the_start"
                    late.hold {
                        reply { context throws(Problem) in
                            HTTPResponse(status: 200, headers: [HTTPHeader(name: "X-Noted", value: context.log.clientID ?? "")], body: [])
                        }
                    }
                }, deadline: .storesOwn))
        builder.root.add(
            "GET", "/soon", name: "soon", .later { _, reply throws(Problem) in reply { _ throws(Problem) in HTTPResponse(status: 200) } })
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

    @Test("a durable write's answer has no deadline of the router's, and the builder sees what the start noted in the context")
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
        #expect(response?.headers.contains(HTTPHeader(name: "X-Noted", value: "clid_noted_by_the_start")) == true)
    }
}
