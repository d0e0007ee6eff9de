import AttestObservability
import AttestService

extension Application {
    /// Says in the log what a SQLite node saw of its own clock at a purge: a step ahead (the purge
    /// then holds back for one token lifetime rather than delete live tokens), a first purge on a
    /// clock past the newest token by more than a stop would explain, a clock before it.
    func tellHeldBack(_ verdict: PurgeHorizon.Verdict) {
        let lifetime = service.policy.tokenLifetime
        if let step = verdict.step {
            logger.log(
                .error,
                "this node's clock stepped ahead while running: the purge deletes nothing that could still be live for one token lifetime (check NTP)",
                ["clock.step_seconds": .int(Int(step.rounded())), "hold_seconds": .int(Int(lifetime))])
        } else if verdict.first, verdict.heldBack >= 1 {
            logger.log(
                verdict.heldBack >= Double(lifetime) ? .info : .warning,
                "this node's clock reads past the newest token in its database: unless attestd was stopped or idle that long, the clock is fast (check NTP); the purge deletes nothing that could still be live for one token lifetime",
                ["clock.ahead_of_newest_token_seconds": .int(Int(verdict.heldBack.rounded())), "hold_seconds": .int(Int(lifetime))])
        }
        if let behind = verdict.behind {
            logger.log(
                .error,
                "this node's clock reads before the newest token in its database: it stepped back (check NTP); tokens then stay valid longer",
                ["clock.behind_newest_token_seconds": .int(Int(behind.rounded()))])
        }
    }

    /// Measures this node's clock against the database's (PostgreSQL) and says so in the log when
    /// it strays past the tolerance or comes back: one line per measurement, not per request.
    package func checkClock() {
        do {
            guard let skew = try service.measureClockSkew() else { return }
            if !service.clockAgrees {
                logger.log(
                    .error,
                    "this node's clock disagrees with the database's: refusing to serve and to purge until it agrees (check NTP)",
                    [
                        "clock.skew_seconds": .double((skew * 1000).rounded() / 1000),
                        "tolerance_seconds": .double(service.policy.clockSkewToleranceSeconds),
                    ])
            }
        } catch {
            logger.log(.warning, "could not measure the clock against the database's", ["error": .string(error.subcode.identifier)])
        }
    }
}
