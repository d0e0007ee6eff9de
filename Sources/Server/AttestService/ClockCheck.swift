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

    /// What a SQLite node can see of its own clock: the bits of the skew in the database-minus-node
    /// sense (a step ahead while the purge holds back for it, or how far the clock reads before
    /// the newest token's issue time), and of how far the purge holds back, seconds.
    private let local = Atomic<UInt64>(ClockCheck.unmeasured)
    private let heldBack = Atomic<UInt64>(Double(0).bitPattern)

    /// The skew a SQLite node can see; nil when it sees none.
    var localSkew: Double? {
        let bits = local.load(ordering: .acquiring)
        return bits == Self.unmeasured ? nil : Double(bitPattern: bits)
    }

    /// Seconds the purge's horizon is behind this node's clock (0: not held back).
    var purgeHeldBack: Double { Double(bitPattern: heldBack.load(ordering: .acquiring)) }

    /// Keeps what a purge's verdict showed of this node's clock.
    func recordLocal(_ verdict: PurgeHorizon.Verdict) {
        heldBack.store(verdict.heldBack.bitPattern, ordering: .releasing)
        let seen: Double? =
            if let step = verdict.step { -step } else if let behind = verdict.behind { behind } else if verdict.heldBack > 0 {
                localSkew.flatMap { $0 < 0 ? $0 : nil }
            } else { nil }
        local.store(seen.map(\.bitPattern) ?? Self.unmeasured, ordering: .releasing)
    }

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

    /// The last measured skew (database minus node, seconds): against PostgreSQL's clock; on
    /// SQLite what the purge can see (a step ahead while it holds back, a clock before the newest
    /// token). Nil before the first measurement or when nothing is seen.
    package var clockSkewSeconds: Double? { clockCheck.skew ?? clockCheck.localSkew }

    /// Seconds the purge holds back behind this node's clock (SQLite, after a step ahead).
    package var purgeHeldBackSeconds: Double { clockCheck.purgeHeldBack }

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
