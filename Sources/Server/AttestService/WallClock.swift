import Foundation
import Synchronization

/// The current time in Unix seconds, injected so that tests and test mode control expiry to the
/// second. (Not `Swift.Clock`, which measures durations, not dates.)
package protocol WallClock: Sendable {
    /// Unix seconds.
    func now() -> Int64
    /// Unix seconds with a fraction, for measuring the clock against another (`ClockCheck`).
    func preciseNow() -> Double
    /// Seconds on a clock nobody sets (monotonic), to tell a step of this clock from time
    /// passing (`PurgeHorizon`); nil for a clock that has none (a test's, a frozen one).
    func monotonicSeconds() -> Double?
}

extension WallClock {
    /// Whole seconds, for clocks that keep no finer time (a test's clock).
    package func preciseNow() -> Double { Double(now()) }
    /// None: a clock that only moves when told has no steps to tell from time passing.
    package func monotonicSeconds() -> Double? { nil }
}

/// The system's wall clock.
package struct SystemWallClock: WallClock {
    /// The system clock.
    package init() {}
    /// Unix seconds from the system.
    package func now() -> Int64 { Int64(Date().timeIntervalSince1970) }
    /// Unix seconds with a fraction from the system.
    package func preciseNow() -> Double { Date().timeIntervalSince1970 }
    /// Seconds on the monotonic clock since this process first asked (suspension included).
    package func monotonicSeconds() -> Double? {
        let elapsed = ContinuousClock.now - Self.origin
        return Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    }

    private static let origin = ContinuousClock.now
}

/// A clock that can be set: a test's clock, and `POST /test/clock` in `--insecure-test-mode`.
/// Until set, it reads `fallback` (nil: starts at `start`).
package final class SettableWallClock: WallClock {
    private let fallback: (any WallClock)?
    private let frozen: Atomic<Int64>

    /// A clock frozen at `start` Unix seconds.
    package init(_ start: Int64) {
        fallback = nil
        frozen = Atomic(start)
    }

    /// A clock that follows `fallback` until `set` freezes it.
    package init(following fallback: any WallClock) {
        self.fallback = fallback
        frozen = Atomic(0)
    }

    /// The frozen time, or the fallback's when not frozen.
    package func now() -> Int64 {
        let value = frozen.load(ordering: .relaxed)
        if value == 0, let fallback { return fallback.now() }
        return value
    }

    /// The fallback's precise time while not frozen; whole seconds once frozen.
    package func preciseNow() -> Double {
        if frozen.load(ordering: .relaxed) == 0, let fallback { return fallback.preciseNow() }
        return Double(now())
    }

    /// Freezes the clock at `seconds` (Unix); 0 returns to the fallback.
    package func set(_ seconds: Int64) { frozen.store(seconds, ordering: .relaxed) }

    /// Moves a frozen clock by `seconds`.
    package func advance(_ seconds: Int64) { frozen.add(seconds, ordering: .relaxed) }
}
