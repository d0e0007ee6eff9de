package import Foundation

/// The client's monotonic clock and its pauses: what retry budgets, call deadlines, challenge
/// lifetimes and key turns are measured on (never the wall clock, which a test or the user can
/// move). A seam: the package's tests give a manual clock, so retries take no real time.
package protocol MonotonicClock: Sendable {
    /// Seconds since an arbitrary start, never going back.
    func now() -> TimeInterval
    /// Pauses `seconds`; throws `CancellationError` at once when the calling task is cancelled.
    func sleep(_ seconds: TimeInterval) async throws
}

/// The system's uptime clock and `Task.sleep`.
package struct SystemMonotonicClock: MonotonicClock {
    package init() {}

    package func now() -> TimeInterval { ProcessInfo.processInfo.systemUptime }

    package func sleep(_ seconds: TimeInterval) async throws {
        try await Task.sleep(nanoseconds: UInt64(max(seconds, 0) * 1_000_000_000))
    }
}
