import AttestClock
import AttestServer
import AttestTesting
import Dispatch
import Synchronization
import Testing

/// The purge runs on a queue of its own (decision 0015); stopping it waits for a purge under way,
/// so that none writes after the store's last checkpoint at a clean stop. On a manual clock: the
/// ticks pass without real time passing.
@Suite("PurgeTimer")
struct PurgeTimerTests {
    @Test("runs at once and then every interval of its clock, and never before")
    func ticks() {
        let clock = ManualTimerClock()
        let runs = Atomic<Int>(0)
        let ran = DispatchSemaphore(value: 0)
        let timer = PurgeTimer(every: 60, clock: clock) {
            runs.add(1, ordering: .sequentiallyConsistent)
            ran.signal()
        }
        #expect(ran.wait(timeout: .now() + .seconds(10)) == .success)  // at once
        clock.advance(by: .seconds(59))
        #expect(runs.load(ordering: .sequentiallyConsistent) == 1)
        clock.advance(by: .seconds(1))
        #expect(runs.load(ordering: .sequentiallyConsistent) == 2)
        clock.advance(by: .seconds(120))
        #expect(runs.load(ordering: .sequentiallyConsistent) == 4)
        #expect(timer.stop(waitingAtMost: .seconds(5)))
    }

    @Test("stop waits for a job under way, and no job runs after it")
    func stopWaitsForTheJob() {
        let clock = ManualTimerClock()
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let finished = Atomic<Int>(0)
        let runs = Atomic<Int>(0)
        let timer = PurgeTimer(every: 1, clock: clock) {
            runs.add(1, ordering: .sequentiallyConsistent)
            started.signal()
            release.wait()
            finished.add(1, ordering: .sequentiallyConsistent)
        }
        #expect(started.wait(timeout: .now() + .seconds(10)) == .success)
        let stopped = DispatchSemaphore(value: 0)
        let outcome = Mutex(false)
        DispatchQueue(label: "stopper").async {
            let idle = timer.stop(waitingAtMost: .seconds(10))
            outcome.withLock { $0 = idle }
            stopped.signal()
        }
        // The stop has begun once the next run's timer is gone; it holds while the job runs.
        #expect(eventually { clock.pendingCount == 0 })
        #expect(stopped.wait(timeout: .now() + .milliseconds(200)) == .timedOut)
        release.signal()
        #expect(stopped.wait(timeout: .now() + .seconds(10)) == .success)
        #expect(outcome.withLock { $0 })
        #expect(finished.load(ordering: .sequentiallyConsistent) == 1)
        clock.advance(by: .seconds(10))
        #expect(runs.load(ordering: .sequentiallyConsistent) == 1)
        #expect(clock.pendingCount == 0)
    }

    @Test("gives up waiting after the limit for a job that does not finish")
    func boundedWait() {
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let timer = PurgeTimer(every: 60, clock: ManualTimerClock()) {
            started.signal()
            release.wait()
        }
        started.wait()
        let before = ContinuousClock.now
        #expect(!timer.stop(waitingAtMost: .milliseconds(300)))
        #expect(ContinuousClock.now - before < .seconds(2))
        release.signal()
    }
}
