import AttestStorage
import Synchronization

/// This node's clock against the shared database's (PostgreSQL), measured at start and at every
/// purge tick: beyond the tolerance the node refuses to serve (503 `clock_skew`, readiness too)
/// and does not purge, rather than take decisions about shared rows on a wrong clock.
final class ClockCheck: Sendable {
    /// The last measurement's bits: the database's clock minus this node's, seconds; `unmeasured`
    /// when the store has no other clock (SQLite) or nothing was measured yet.
    ///
    /// Why an atomic: every request reads it (`requireAgreeingClock`), and a lock taken by every
    /// worker for it made them queue (docs/BENCHMARKS.md).
    private let measured = Atomic<UInt64>(ClockCheck.unmeasured)

    /// A NaN no measurement produces (`database - (before + after) / 2` of finite times).
    private static let unmeasured = Double(nan: 0x2_5EED, signaling: false).bitPattern

    var skew: Double? {
        let bits = measured.load(ordering: .acquiring)
        return bits == Self.unmeasured ? nil : Double(bitPattern: bits)
    }

    private func record(_ skew: Double?) { measured.store(skew.map(\.bitPattern) ?? Self.unmeasured, ordering: .releasing) }

    /// Measures the skew: the database's time against the middle of this node's round trip.
    func measure(store: any StoreMaintenance, clock: any WallClock) throws(StorageError) -> Double? {
        let before = clock.preciseNow()
        guard let database = try store.databaseTime() else {
            record(nil)
            return nil
        }
        let after = clock.preciseNow()
        let skew = database - (before + after) / 2
        record(skew)
        return skew
    }
}

extension TokenService {
    /// Measures this node's clock against the database's and keeps the result; nil for SQLite.
    package func measureClockSkew() throws(ServiceError) -> Double? {
        try stored { () throws(StorageError) in try clockCheck.measure(store: store, clock: clock) }
    }

    /// The last measured skew (database minus node, seconds); nil for SQLite or before the first.
    package var clockSkewSeconds: Double? { clockCheck.skew }

    /// Whether the last measurement is within the tolerance (always for SQLite).
    package var clockAgrees: Bool { abs(clockCheck.skew ?? 0) <= policy.clockSkewToleranceSeconds }

    /// Refuses to act on a clock that disagrees with the database's past the tolerance.
    func requireAgreeingClock() throws(ServiceError) {
        guard let skew = clockCheck.skew, abs(skew) > policy.clockSkewToleranceSeconds else { return }
        throw ServiceError(
            .storageUnavailable, .clockSkew,
            "this node's clock is \(Int(abs(skew).rounded())) s \(skew > 0 ? "behind" : "ahead of") the database's "
                + "(tolerance \(Int(policy.clockSkewToleranceSeconds)) s)", retryAfter: 5)
    }
}
