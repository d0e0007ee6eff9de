import AttestObservability
import Synchronization
import Testing

@Suite("Repeated error lines: one per kind and interval, with the count held back")
struct RepeatedLinesTests {
    /// A clock the test moves by hand.
    final class HandClock: Sendable {
        let instant = Mutex(ContinuousClock.now)
        func advance(_ duration: Duration) { instant.withLock { $0 += duration } }
        var now: @Sendable () -> ContinuousClock.Instant { { [self] in instant.withLock { $0 } } }
    }

    @Test("the first line of a kind is written, the rest of the interval held back, the next one says how many")
    func oneLinePerInterval() {
        let clock = HandClock()
        let lines = RepeatedLines(interval: .seconds(10), now: clock.now)
        #expect(lines.admit("storage unavailable") == 0)
        for _ in 0..<37 {
            #expect(lines.admit("storage unavailable") == nil)
        }
        clock.advance(.seconds(9))
        #expect(lines.admit("storage unavailable") == nil)
        clock.advance(.seconds(1))
        #expect(lines.admit("storage unavailable") == 38)
        #expect(lines.admit("storage unavailable") == nil)
        clock.advance(.seconds(10))
        #expect(lines.admit("storage unavailable") == 1)
    }

    @Test("kinds are held back independently")
    func kindsApart() {
        let clock = HandClock()
        let lines = RepeatedLines(interval: .seconds(10), now: clock.now)
        #expect(lines.admit("request challenge 503") == 0)
        #expect(lines.admit("request authorize 503") == 0)
        #expect(lines.admit("request challenge 503") == nil)
        #expect(lines.admit("request authorize 503") == nil)
    }

    @Test("past 256 kinds, new kinds are still written and the memory stays bounded")
    func boundedKinds() {
        let clock = HandClock()
        let lines = RepeatedLines(interval: .seconds(10), now: clock.now)
        for kind in 0..<1000 {
            #expect(lines.admit("kind \(kind)") == 0)
        }
        #expect(lines.admit("kind 0") == nil)
        clock.advance(.seconds(10))
        #expect(lines.admit("kind 999") == 0)
    }
}
