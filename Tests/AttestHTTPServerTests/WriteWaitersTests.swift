import AttestClock
import AttestTesting
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import AttestHTTPServer

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

    @Test("runs at most `limit` at once, the rest first come first served, and its threads end when idle")
    func limitOrderAndIdle() {
        let clock = ManualTimerClock()
        let waiters = WriteWaiters(limit: 2, idleLimit: .seconds(2), clock: clock)
        #expect(waiters.load == (0, 0))
        let gate = Gate()
        for index in 0..<6 { gate.submit(index, to: waiters) }
        #expect(eventually { gate.started.withLock { $0.count } == 2 })
        #expect(waiters.load == (2, 4))
        gate.release()
        #expect(gate.finished.wait(timeout: .now() + .seconds(5)) == .success)
        // Two threads take the queued work in turn; which of them records first is theirs to race.
        let started = gate.started.withLock { $0 }
        #expect(Set(started.prefix(2)) == [0, 1] && Set(started.dropFirst(2)) == [2, 3, 4, 5])
        // Both idle now, each with one idle check scheduled; they last until the clock passes it.
        #expect(eventually { clock.pendingCount == 2 })
        clock.advance(by: .milliseconds(1_999))
        #expect(waiters.load == (2, 0))
        clock.advance(by: .milliseconds(1))
        #expect(waiters.load == (0, 0))
        // A thread that ended is started again for new work.
        let again = Gate()
        again.release()
        again.submit(0, to: waiters)
        #expect(again.finished.wait(timeout: .now() + .seconds(5)) == .success)
        waiters.stop()
    }

    @Test("a thread that works while its idle check is pending lasts a full idle limit from its last work")
    func workPostponesTheEnd() {
        let clock = ManualTimerClock()
        let waiters = WriteWaiters(limit: 1, idleLimit: .seconds(2), clock: clock)
        defer { waiters.stop() }
        func runOne() {
            let gate = Gate()
            gate.release()
            gate.submit(0, to: waiters)
            #expect(gate.finished.wait(timeout: .now() + .seconds(5)) == .success)
        }
        runOne()
        #expect(eventually { waiters.idleThreads == 1 && clock.pendingCount == 1 })
        clock.advance(by: .seconds(1))
        runOne()
        // The check scheduled at the first idle wait finds it idle for one second only, and looks again later.
        #expect(eventually { waiters.idleThreads == 1 && waiters.load == (1, 0) })
        clock.advance(by: .seconds(1))
        #expect(waiters.load == (1, 0))
        clock.advance(by: .seconds(1))
        #expect(waiters.load == (0, 0))
    }

    @Test("stop withdraws the queued work without running it, waits for the running one; work given after it is withdrawn at once")
    func stopWithdrawsQueued() {
        let waiters = WriteWaiters(limit: 1)
        let gate = Gate()
        for index in 0..<3 { gate.submit(index, to: waiters) }
        #expect(eventually { gate.started.withLock { $0 } == [0] })
        let stopped = DispatchSemaphore(value: 0)
        DispatchQueue(label: "stopper").async {
            waiters.stop()
            stopped.signal()
        }
        // The queued two are withdrawn at once; the running one holds the stop until it ends.
        #expect(eventually { gate.withdrawn.withLock { $0 } == [1, 2] })
        #expect(stopped.wait(timeout: .now() + .milliseconds(200)) == .timedOut)
        gate.release()
        #expect(stopped.wait(timeout: .now() + .seconds(5)) == .success)
        #expect(gate.started.withLock { $0 } == [0])
        #expect(waiters.load == (0, 0))
        let caller = pthread_self()
        let withdrawnOn = Mutex<(ran: Bool, onCaller: Bool)?>(nil)
        waiters.run(
            { withdrawnOn.withLock { $0 = (true, false) } }, withdrawn: { withdrawnOn.withLock { $0 = (false, pthread_self() == caller) } })
        #expect(withdrawnOn.withLock { $0 }?.ran == false)
        #expect(withdrawnOn.withLock { $0 }?.onCaller == true)
    }
}
