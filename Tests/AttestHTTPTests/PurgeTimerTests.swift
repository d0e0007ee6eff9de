import AttestServer
import Foundation
import Synchronization
import Testing

/// The purge runs on a queue of its own (decision 0015); stopping it waits for a purge under way,
/// so that none writes after the store's last checkpoint at a clean stop.
@Suite("PurgeTimer")
struct PurgeTimerTests {
    @Test("runs at once, then stops: a job under way finishes before stop returns, and none runs after")
    func stopWaitsForTheJob() {
        let runs = Atomic<Int>(0)
        let finished = Atomic<Int>(0)
        let timer = PurgeTimer(every: 1) {
            runs.add(1, ordering: .sequentiallyConsistent)
            usleep(400_000)
            finished.add(1, ordering: .sequentiallyConsistent)
        }
        let deadline = ContinuousClock.now + .seconds(2)
        while runs.load(ordering: .sequentiallyConsistent) == 0 && ContinuousClock.now < deadline { usleep(5_000) }
        #expect(runs.load(ordering: .sequentiallyConsistent) == 1)
        #expect(timer.stop(waitingAtMost: .seconds(2)))
        #expect(finished.load(ordering: .sequentiallyConsistent) == 1)
        usleep(1_500_000)
        #expect(runs.load(ordering: .sequentiallyConsistent) == 1)
    }

    @Test("gives up waiting after the limit for a job that does not finish")
    func boundedWait() {
        let release = DispatchSemaphore(value: 0)
        let started = DispatchSemaphore(value: 0)
        let timer = PurgeTimer(every: 60) {
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
