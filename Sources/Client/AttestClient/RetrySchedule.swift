import Foundation

/// A failure worth another try after a pause (no connection, 429, 503 and other 5xx, Apple's
/// service unavailable): what to throw when the retry budget is spent, and the service's
/// `Retry-After` when it gave one.
struct RetryableFailure: Error, Sendable {
    let final: AttestClientError
    let retryAfter: TimeInterval?
}

/// When to try again within one `token()` call: the service's `Retry-After` when it gave one,
/// otherwise exponential backoff with jitter (0.25-0.5 s, then 0.5-1 s, ... up to 4-8 s), and
/// never past the budget, measured on the monotonic clock from the call's start (so neither a
/// test's clock nor the user changing the time shortens or stretches it).
struct RetrySchedule {
    let budget: TimeInterval
    private let clock: any MonotonicClock
    private let start: TimeInterval
    private var failures = 0

    init(budget: TimeInterval, clock: any MonotonicClock) {
        self.budget = budget
        self.clock = clock
        start = clock.now()
    }

    /// The pause before the next try, or nil when it would end past the budget.
    mutating func pause(retryAfter: TimeInterval?) -> TimeInterval? {
        failures += 1
        // A Retry-After of 0 (or in the past) still waits a little, so a confused proxy cannot
        // make the client spin.
        let pause = retryAfter.map { max($0, 0.1) } ?? Self.backoff(failures)
        guard clock.now() - start + pause <= budget else { return nil }
        return pause
    }

    /// The pause after `failures` consecutive failures: half the ceiling plus a random part of the
    /// other half, so that devices cut off together do not come back together.
    static func backoff(_ failures: Int) -> TimeInterval {
        let ceiling = min(8, 0.5 * pow(2, Double(min(failures, 16) - 1)))
        return ceiling / 2 + Double.random(in: 0...(ceiling / 2))
    }

    /// `Retry-After` in seconds: a number of seconds or an HTTP date (RFC 9110); nil otherwise.
    static func retryAfter(_ value: String?) -> TimeInterval? {
        guard let value = value?.trimmingCharacters(in: .whitespaces), !value.isEmpty else { return nil }
        if value.utf8.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) {
            return TimeInterval(value)
        }
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        return formatter.date(from: value).map { max($0.timeIntervalSinceNow, 0) }
    }
}
