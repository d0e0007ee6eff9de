import AttestCore
import AttestCrypto
import AttestStorage
import AttestTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AttestService

/// Attest and refresh answered later (issue 22, item 3): the checks, the verification and the
/// durable write on a write waiter, so that an HTTP worker never waits for the store (it serves
/// the next request meanwhile), and the writes that queue up share a flush.
@Suite("Attest, refresh and challenges: the store's work off the caller's thread")
struct WriteLaterTests {
    /// The outcome `reply` got, whether it came before the call returned, and the thread it came on.
    final class Answer<Value: Sendable>: Sendable {
        private struct State {
            var outcome: Result<Value, ServiceError>?
            var onCaller = false
        }

        private let state = Mutex(State())
        private let done = DispatchSemaphore(value: 0)

        /// Calls `start` with a reply that records the answer; returns whether it came before `start` returned.
        func run(_ start: (@escaping @Sendable (Result<Value, ServiceError>) -> Void) -> Void) -> Self {
            let callerThread = pthread_self()
            start { outcome in
                let onCaller = pthread_self() == callerThread
                self.state.withLock {
                    $0.outcome = outcome
                    $0.onCaller = onCaller
                }
                self.done.signal()
            }
            return self
        }

        func wait() -> (outcome: Result<Value, ServiceError>?, onCaller: Bool) {
            guard done.wait(timeout: .now() + .seconds(10)) == .success else { return (nil, false) }
            return state.withLock { ($0.outcome, $0.onCaller) }
        }
    }

    @Test("an attestation and a refresh that verify are written on another thread and answered with an active token")
    func writtenElsewhere() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var device = try SyntheticDevice()
        let attestRequest = try world.attestRequest(device)
        let attested = Answer<IssuedToken>().run { reply in world.service.attest(Presented(attestRequest), from: "127.0.0.1", then: reply) }
            .wait()
        #expect(!attested.onCaller)
        let first = try #require(try attested.outcome?.get())
        #expect(try world.service.introspect(first.accessToken) != nil)
        #expect(try world.store.device(keyID: device.keyID)?.status == .active)

        let request = try world.refreshRequest(&device)
        let refreshed = Answer<IssuedToken>().run { reply in world.service.refresh(Presented(request), from: "127.0.0.1", then: reply) }
            .wait()
        #expect(!refreshed.onCaller)
        let second = try #require(try refreshed.outcome?.get())
        #expect(try world.service.introspect(second.accessToken) != nil)
        #expect(try world.store.device(keyID: device.keyID)?.counter == 1)
    }

    @Test("a request refused by its checks is answered from a waiter too, spends its challenge and writes no device")
    func refusedByTheChecks() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let device = try SyntheticDevice()
        var broken = try world.attestRequest(try SyntheticDevice())
        broken.keyID = try #require(KeyID(device.keyID))  // another key's ID: the nonce and key ID checks fail
        let refused = Answer<IssuedToken>().run { reply in world.service.attest(Presented(broken), from: "127.0.0.1", then: reply) }.wait()
        #expect(!refused.onCaller)
        #expect(serviceError { try refused.outcome?.get() }?.code == .attestationRejected)
        #expect(try world.store.device(keyID: device.keyID) == nil)
        #expect(try world.store.challenge(id: broken.challenge.storedID)?.consumed == true)
    }

    @Test(
        "a write refused after the checks spends the challenge and writes nothing: the integration suspended in between, the new-key bucket empty"
    )
    func refusedByTheWrite() throws {
        var policy = ServicePolicy()
        policy.attestPerIntegration = RateLimit(perSecond: 0.001, burst: 1)
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        let device = try SyntheticDevice()
        let request = try world.attestRequest(device)
        let prepared = try world.service.prepareAttest(Presented(request), from: "127.0.0.1")
        #expect(try world.store.challenge(id: request.challenge.storedID)?.consumed == false)
        #expect(try world.admin.setSuspended(clientID: world.integration.clientID, true) == true)
        #expect(serviceError { try prepared.issue() }?.code == .integrationSuspended)
        #expect(try world.store.device(keyID: device.keyID) == nil)
        #expect(try world.store.challenge(id: request.challenge.storedID)?.consumed == true)
        #expect(try world.admin.setSuspended(clientID: world.integration.clientID, false) == true)

        // The bucket's one token taken by the write above (charged before its registration): the
        // next write is refused before it registers anything, and its challenge is spent by the
        // write's own rule.
        let second = try SyntheticDevice()
        let refused = try world.attestRequest(second)
        let limited = try world.service.prepareAttest(Presented(refused), from: "127.0.0.1")
        #expect(serviceError { try limited.issue() }?.code == .rateLimited)
        #expect(try world.store.device(keyID: second.keyID) == nil)
        #expect(try world.store.challenge(id: refused.challenge.storedID)?.consumed == true)
    }

    @Test("a refresh prepared twice with one counter: the first write wins, the second is refused and mints nothing")
    func preparedRefreshesRace() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        var device = try SyntheticDevice()
        _ = try world.service.attest(try world.attestRequest(device), from: "127.0.0.1")
        let first = try world.service.prepareRefresh(Presented(try world.refreshRequest(&device, counter: 5)))
        let second = try world.service.prepareRefresh(Presented(try world.refreshRequest(&device, counter: 5)))
        let token = try first.issue()
        #expect(serviceError { try second.issue() } == ServiceError(.assertionRejected, .check(.counterNotIncreasing), ""))
        #expect(try world.service.introspect(token.accessToken) != nil)
        #expect(try world.store.device(keyID: device.keyID)?.counter == 5)
    }
}

/// Every report the service makes, in order.
final class RecordingObserver: ServiceObserver {
    let reports = Mutex<[String]>([])
    func receiptVerified(clientID: String, verdict: String, riskMetric: Int?) {}
    func verificationFinished(_ kind: VerificationKind, outcome: String, clientID: String?) {
        reports.withLock { $0.append("\(kind.rawValue) \(outcome) \(clientID ?? "-")") }
    }
    func tokenIssued(debug: Bool) { reports.withLock { $0.append(debug ? "debug token" : "token") } }
    func debugTokenExchanged(outcome: String) { reports.withLock { $0.append("debug exchange \(outcome)") } }
}

extension WriteLaterTests {
    @Test("each request is reported once: a verified one after its write, a refused one by the check or the write that refused it")
    func reportedOnce() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let observer = RecordingObserver()
        let service = TokenService(
            store: world.store, verifier: try AttestationVerifier(anchor: world.pki.anchor), clock: world.clock, observer: observer)
        let clientID = world.integration.clientID
        var device = try SyntheticDevice()
        let attest = try world.attestRequest(device)
        let attested = Answer<IssuedToken>().run { reply in service.attest(Presented(attest), from: "127.0.0.1", then: reply) }.wait()
        #expect((try? attested.outcome?.get()) != nil)
        #expect(observer.reports.withLock { $0 } == ["attestation ok \(clientID)", "token"])

        var broken = try world.attestRequest(try SyntheticDevice())
        broken.keyID = try #require(KeyID(device.keyID))
        _ = Answer<IssuedToken>().run { reply in service.attest(Presented(broken), from: "127.0.0.1", then: reply) }.wait()
        let afterRefusal = observer.reports.withLock { $0 }
        #expect(afterRefusal.count == 3 && afterRefusal[2].hasPrefix("attestation ") && !afterRefusal[2].hasPrefix("attestation ok"))

        // Two refreshes prepared with one counter: nothing is reported before a write ends.
        let first = try service.prepareRefresh(Presented(try world.refreshRequest(&device, counter: 5)))
        let second = try service.prepareRefresh(Presented(try world.refreshRequest(&device, counter: 5)))
        #expect(observer.reports.withLock { $0.count } == 3)
        _ = try first.issue()
        #expect(serviceError { try second.issue() }?.code == .assertionRejected)
        let counterCheck = ServiceError.Subcode.check(.counterNotIncreasing).identifier
        #expect(
            Array(observer.reports.withLock { $0 }.dropFirst(3)) == [
                "assertion ok \(clientID)", "token", "assertion \(counterCheck) \(clientID)",
            ])
    }
}

extension WriteLaterTests {
    @Test("a challenge for an integration this node knows is inserted on another thread and can be used; its limits refuse at once")
    func challengeInsertedElsewhere() throws {
        var policy = ServicePolicy()
        policy.challengePerIntegration = RateLimit(perSecond: 0.001, burst: 2)
        let world = try ServiceWorld(policy: policy)
        defer { world.remove() }
        let clientID = try #require(ClientID(world.integration.clientID))
        let ask = {
            Answer<AttestService.IssuedChallenge>().run { reply in
                world.service.issueChallenge(clientID: clientID, from: "127.0.0.1", then: reply)
            }
            .wait()
        }
        // The first: the integration read (this node has not seen it) and the insert, off the caller.
        let first = ask()
        #expect(!first.onCaller)
        let issued = try #require(try first.outcome?.get())
        let bytes = try #require(Base64Text.decode(issued.challenge, .url))
        let challenge = try #require(Challenge(bytes))
        let stored = try #require(try world.store.challenge(id: challenge.storedID))
        #expect(stored.clientID == world.integration.clientID && !stored.consumed)

        // The second: known now, so only the insert leaves the caller's thread.
        let second = ask()
        #expect(!second.onCaller)
        #expect((try? second.outcome?.get()) != nil)
        // The integration's bucket (burst 2) is empty: refused on the caller's thread.
        let third = ask()
        #expect(third.onCaller)
        #expect(serviceError { try third.outcome?.get() }?.code == .rateLimited)
    }

    @Test("a challenge for a client ID never found is refused from another thread, and a suspended integration's hint is forgotten")
    func challengeRefusedByTheStore() throws {
        let world = try ServiceWorld()
        defer { world.remove() }
        let unknown = try #require(ClientID("clid_" + String(repeating: "0", count: ClientID.hexDigits)))
        let refused = Answer<AttestService.IssuedChallenge>().run { reply in
            world.service.issueChallenge(clientID: unknown, from: "127.0.0.1", then: reply)
        }
        .wait()
        #expect(!refused.onCaller)
        #expect(serviceError { try refused.outcome?.get() }?.code == .integrationNotFound)

        let clientID = try #require(ClientID(world.integration.clientID))
        _ = try world.service.issueChallenge(clientID: clientID, from: "127.0.0.1")
        #expect(world.service.activeHints.contains(clientID.text))
        #expect(try world.admin.setSuspended(clientID: world.integration.clientID, true) == true)
        let suspended = Answer<AttestService.IssuedChallenge>().run { reply in
            world.service.issueChallenge(clientID: clientID, from: "127.0.0.1", then: reply)
        }
        .wait()
        #expect(serviceError { try suspended.outcome?.get() }?.code == .integrationSuspended)
        #expect(!world.service.activeHints.contains(clientID.text))
    }
}

/// The threads that wait for writes (`WriteWaiters`).
@Suite("Write waiters")
struct WriteWaitersTests {
    /// Work that waits until the test opens the gate, recording the order it started in.
    final class Gate: Sendable {
        private let open = DispatchSemaphore(value: 0)
        let started = Mutex<[Int]>([])
        let finished = DispatchGroup()

        func work(_ index: Int) -> WriteWaiters.Work {
            finished.enter()
            return {
                self.started.withLock { $0.append(index) }
                self.open.wait()
                self.open.signal()
                self.finished.leave()
            }
        }

        func release() { open.signal() }

        /// The indexes of the work withdrawn (never started), in order.
        let withdrawn = Mutex<[Int]>([])

        /// Hands `work(index)` to `waiters`, recording it here if it is withdrawn.
        func submit(_ index: Int, to waiters: WriteWaiters) {
            waiters.run(
                work(index),
                withdrawn: {
                    self.withdrawn.withLock { $0.append(index) }
                    self.finished.leave()
                })
        }
    }

    /// Waits up to 5 s for `condition`.
    static func eventually(_ condition: () -> Bool) -> Bool {
        let deadline = ContinuousClock.now + .seconds(5)
        while !condition() {
            guard ContinuousClock.now < deadline else { return false }
            usleep(5_000)
        }
        return true
    }

    @Test("runs at most `limit` at once, the rest first come first served, and its threads end when idle")
    func limitOrderAndIdle() {
        let waiters = WriteWaiters(limit: 2, idleLimit: .milliseconds(100))
        #expect(waiters.load == (0, 0))
        let gate = Gate()
        for index in 0..<6 { gate.submit(index, to: waiters) }
        #expect(Self.eventually { gate.started.withLock { $0.count } == 2 })
        #expect(waiters.load == (2, 4))
        gate.release()
        #expect(gate.finished.wait(timeout: .now() + .seconds(5)) == .success)
        // Two threads take the queued work in turn; which of them records first is theirs to race.
        let started = gate.started.withLock { $0 }
        #expect(Set(started.prefix(2)) == [0, 1] && Set(started.dropFirst(2)) == [2, 3, 4, 5])
        #expect(Self.eventually { waiters.load == (0, 0) })
        // A thread that ended is started again for new work.
        let again = Gate()
        again.release()
        again.submit(0, to: waiters)
        #expect(again.finished.wait(timeout: .now() + .seconds(5)) == .success)
        waiters.stop()
    }

    @Test("stop withdraws the queued work without running it, waits for the running one; work given after it is withdrawn at once")
    func stopWithdrawsQueued() throws {
        let waiters = WriteWaiters(limit: 1)
        let gate = Gate()
        for index in 0..<3 { gate.submit(index, to: waiters) }
        #expect(Self.eventually { gate.started.withLock { $0 } == [0] })
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue(label: "stopper").async {
            waiters.stop()
            stopped.signal()
        }
        // The queued two are withdrawn at once; the running one holds the stop until it ends.
        #expect(Self.eventually { gate.withdrawn.withLock { $0 } == [1, 2] })
        #expect(stopped.wait(timeout: .now() + .milliseconds(200)) == .timedOut)
        gate.release()
        #expect(stopped.wait(timeout: .now() + .seconds(5)) == .success)
        #expect(gate.started.withLock { $0 } == [0])
        #expect(waiters.load == (0, 0))
        let caller = pthread_self()
        let outcome = Mutex<(Result<Int, ServiceError>, Bool)?>(nil)
        waiters.run({ () throws(ServiceError) in 1 }, then: { result in outcome.withLock { $0 = (result, pthread_self() == caller) } })
        let (result, onCaller) = try #require(outcome.withLock { $0 })
        #expect(onCaller)
        #expect(serviceError { try result.get() } == WriteWaiters.stopping)
    }
}
