/// How far a purge may delete on a store only this node uses (SQLite), whose clock has nothing
/// to be checked against: the purge never deletes a token that could still be live when this
/// node's clock has stepped ahead.
///
/// A purge deletes what expired by the node's clock, so a clock two hours fast would delete every
/// live token at its first tick, for good. Two steps are seen:
/// - at the first purge, the clock reads past the newest token the database recorded: either the
///   node was stopped (or idle) that long, or its clock is fast; the two cannot be told apart;
/// - while running, the clock moves further than the monotonic clock did: a step.
///
/// After either, for one token lifetime, the purge's horizon is the last trusted time plus the
/// monotonic time since: every token issued before the step has expired by then on any clock,
/// and tokens issued after it carry the new clock's expiry. Holding back only keeps expired rows
/// a little longer. A pure value: time comes in as arguments.
package struct PurgeHorizon: Sendable {
    /// One token lifetime: how long a hold lasts.
    let hold: Double
    /// A step smaller than this is jitter (the clock check's tolerance).
    let tolerance: Double

    /// The trusted time at the hold's start, and the monotonic time then; nil: no hold.
    private var anchor: (wall: Double, monotonic: Double)?
    /// The previous purge's wall and monotonic times.
    private var previous: (wall: Double, monotonic: Double)?

    package init(hold: Double, tolerance: Double) {
        self.hold = hold
        self.tolerance = tolerance
    }

    /// What one purge may do.
    package struct Verdict: Equatable, Sendable {
        /// Unix seconds: rows that expired before it may go.
        package var time: Int64
        /// Seconds the horizon is behind this node's clock (0: not held back).
        package var heldBack: Double
        /// Seconds this node's clock stepped ahead since the previous purge, when it did now.
        package var step: Double?
        /// Whether this purge is the first (its hold covers the time the node was stopped).
        package var first: Bool
        /// Seconds this node's clock reads before the newest token's issue time, when past the
        /// tolerance: the clock stepped back (expired tokens then live on; none is deleted early).
        package var behind: Double?
    }

    /// The horizon at `wall` (Unix seconds) and `monotonic` (seconds on a clock nobody sets),
    /// given the newest token's issue time the store holds (nil: none). Records this purge.
    package mutating func verdict(wall: Double, monotonic: Double, newestIssue: Int64?) -> Verdict {
        let first = previous == nil
        var step: Double?
        if let previous {
            let expected = previous.wall + (monotonic - previous.monotonic)
            if wall - expected > tolerance {
                step = wall - expected
                anchor = (trusted(expected: expected, monotonic: monotonic), monotonic)
            }
        } else if let newestIssue, wall - Double(newestIssue) > tolerance {
            anchor = (Double(newestIssue), monotonic)
        }
        previous = (wall, monotonic)
        if let held = anchor, monotonic - held.monotonic >= hold { anchor = nil }
        let horizon = anchor.map { min(wall, $0.wall + (monotonic - $0.monotonic)) } ?? wall
        let behind = newestIssue.map { Double($0) - wall }.flatMap { $0 > tolerance ? $0 : nil }
        return Verdict(time: Int64(horizon.rounded(.down)), heldBack: wall - horizon, step: step, first: first, behind: behind)
    }

    /// The time to hold back to at a step: the running hold's horizon, or the time the clock
    /// should have read.
    private func trusted(expected: Double, monotonic: Double) -> Double {
        guard let held = anchor else { return expected }
        return min(expected, held.wall + (monotonic - held.monotonic))
    }
}

/// What one purge did.
package struct PurgeReport: Sendable, Equatable {
    /// Rows deleted.
    package var removed: Int
    /// How far it could delete on a store whose clock is this node's (nil: PostgreSQL, or a
    /// clock that cannot tell a step from time passing).
    package var verdict: PurgeHorizon.Verdict?
}
