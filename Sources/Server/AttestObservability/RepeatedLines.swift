import Synchronization

/// Lets one log line per kind and interval through and counts the rest. During a database
/// outage every failing request would write the same error line and flood the journal;
/// with this, each kind writes at most one line per interval, carrying how many like it were
/// held back since the last one written (`repeated`). Exact counts stay in `/metrics`.
package final class RepeatedLines: Sendable {
    /// How long after a kind's written line the next of that kind is held back.
    package let interval: Duration
    private let now: @Sendable () -> ContinuousClock.Instant
    private let kinds = Mutex<[String: Kind]>([:])
    /// Kinds remembered at most; past this, kinds whose interval is over are forgotten.
    private static let kindLimit = 256

    private struct Kind {
        var writtenAt: ContinuousClock.Instant
        var heldBack: Int
    }

    /// `now` is injected so that tests can step over the interval.
    package init(interval: Duration = .seconds(10), now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        (self.interval, self.now) = (interval, now)
    }

    /// Whether a line of `kind` is written now: nil when it is held back (and counted), otherwise
    /// the number of lines of that kind held back since the last one written.
    package func admit(_ kind: String) -> Int? {
        let time = now()
        return kinds.withLock { kinds in
            if var known = kinds[kind], time - known.writtenAt < interval {
                known.heldBack += 1
                kinds[kind] = known
                return nil
            }
            let heldBack = kinds[kind]?.heldBack ?? 0
            if kinds[kind] == nil && kinds.count >= Self.kindLimit {
                kinds = kinds.filter { time - $0.value.writtenAt < interval }
            }
            if kinds[kind] != nil || kinds.count < Self.kindLimit {
                kinds[kind] = Kind(writtenAt: time, heldBack: 0)
            }
            return heldBack
        }
    }
}
