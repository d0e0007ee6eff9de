import AttestClock
import AttestHTTPServer
import AttestTesting
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
    static func router(late: HeldAnswers = HeldAnswers(), clock: ManualTimerClock = ManualTimerClock()) -> Router {
        let builder = RouterBuilder()
        builder.root.add("GET", "/never", name: "never", .lookup { _, _ in })
        builder.root.add("GET", "/late", name: "late", .lookup { _, reply in late.hold { reply { _ in HTTPResponse(status: 200) } } })
        builder.root.offload("GET", "/write", name: "write") { _ in
            late.waitUntilGiven()
            return HTTPResponse(status: 200)
        }
        builder.root.add("GET", "/soon", name: "soon", .lookup { _, reply in reply { _ in HTTPResponse(status: 200) } })
        return builder.router(middleware: [], answerDeadline: .milliseconds(300), clock: clock)
    }

    /// A request answered on a thread of its own (the router's wait blocks it).
    final class Asked: Sendable {
        private let answered = Mutex<HTTPResponse?>(nil)
        private let done = DispatchSemaphore(value: 0)

        init(_ router: Router, _ request: HTTPRequest) {
            Thread { [self] in
                let response = router.respond(to: request)
                answered.withLock { $0 = response }
                done.signal()
            }.start()
        }

        /// The answer, or nil when it has not come within `seconds` of real time.
        func answer(within seconds: Double = 10) -> HTTPResponse? {
            guard done.wait(timeout: .now() + .milliseconds(Int(seconds * 1000))) == .success else { return nil }
            done.signal()
            return answered.withLock { $0 }
        }
    }

    /// Asks `router` for `path` and moves `clock` past the deadline once the lookup waits for it.
    static func pastTheDeadline(_ router: Router, _ clock: ManualTimerClock, _ path: String) -> HTTPResponse? {
        let asked = Asked(router, HTTPRequest(method: "GET", path: path))
        guard eventually(within: 10, { router.answerDeadlines.pendingCount == 1 }) else { return nil }
        clock.advance(by: .milliseconds(299))
        guard asked.answer(within: 0) == nil else { return nil }  // not yet: a millisecond is left
        clock.advance(by: .milliseconds(1))
        return asked.answer()
    }

    @Test("an answer that has not come by the deadline is 503 storage_unavailable with Retry-After")
    func expires() {
        let clock = ManualTimerClock()
        let router = Self.router(clock: clock)
        guard let response = Self.pastTheDeadline(router, clock, "/never") else {
            Issue.record("no answer at the deadline, or one before it")
            return
        }
        #expect(response.status == 503)
        #expect(response.headers.contains(HTTPHeader(name: "Retry-After", value: "1")))
        #expect(String(decoding: response.body, as: UTF8.self).contains(#""code":"storage_unavailable""#))
        #expect(router.answerDeadlines.pendingCount == 0)
    }

    @Test("the route's answer after the deadline changes nothing; answers in time leave no deadline pending")
    func lateAndTimelyAnswers() {
        let late = HeldAnswers()
        let clock = ManualTimerClock()
        let router = Self.router(late: late, clock: clock)
        #expect(Self.pastTheDeadline(router, clock, "/late")?.status == 503)
        late.giveAll()
        for _ in 0..<100 { #expect(router.respond(to: HTTPRequest(method: "GET", path: "/soon")).status == 200) }
        #expect(router.answerDeadlines.pendingCount == 0)
    }

    @Test("an offloaded handler's answer has no deadline of the router's")
    func writesWaitForTheirOwnAnswer() {
        let late = HeldAnswers()
        let clock = ManualTimerClock()
        let router = Self.router(late: late, clock: clock)
        let asked = Asked(router, HTTPRequest(method: "GET", path: "/write"))
        // Three times the router's deadline: the answer is still the route's to give.
        clock.advance(by: .milliseconds(900))
        #expect(asked.answer(within: 0.1) == nil)
        #expect(router.answerDeadlines.pendingCount == 0 && clock.pendingCount == 0)
        late.giveAll()
        #expect(asked.answer()?.status == 200)
    }
}
