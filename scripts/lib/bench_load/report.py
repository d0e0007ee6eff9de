"""The lines the benchmark prints: ratios, medians and their spread, the paired and pinned rounds."""

from .tools import OPERATIONS


def print_scale(ratios, peaks, purges, label):
    """The large tables against the small ones, per store: the median of the rounds' ratios."""
    for key, store in (("sqlite", "SQLite"), ("pg1", "PostgreSQL")):
        if key not in ratios:
            continue
        for operation in OPERATIONS:
            print("%-10s at %s / small tables (%s): %s   (target >= 0.8)" % (
                operation, label, store, median_spread(ratios[key][operation])))
        print("peak RSS at %s (%s): %d MiB   (target <= 64)" % (label, store, peaks[key] // 1024))
        print("purge of 100,000 tokens expiring at once among %s (%s): %s" % (label, store, purge_line(purges[key])))


def purge_line(figures):
    """A purge's figures beside those of the same load without one."""
    authorize_p99, challenge_p99, removed, reference_authorize, reference_challenge = figures
    return ("%d rows purged; during it authorize p99 %s (the same load without a purge: %s), challenge p99 %s (without: %s)   "
            "(target: no stall over 50 ms)" % (removed, authorize_p99, reference_authorize, challenge_p99, reference_challenge))


def print_pairs(pairs, commit_rates):
    """The paired rounds, the two PostgreSQL targets and refresh against each store's commit rate."""
    def ratio(a, b):
        return "%.2f" % (a / b if b else 0)

    for index, (sqlite_pair, pg_pair) in enumerate(pairs):
        print("paired round %d: authorize/s SQLite %.1f PostgreSQL %.1f (%s); refresh/s SQLite %.1f PostgreSQL %.1f (%s)"
              % (index + 1, sqlite_pair[0], pg_pair[0], ratio(pg_pair[0], sqlite_pair[0]), sqlite_pair[1], pg_pair[1],
                 ratio(pg_pair[1], sqlite_pair[1])))
    if pairs:
        def median(values):
            return sorted(values)[len(values) // 2]
        print("authorize PostgreSQL / SQLite, median of %d paired rounds: %.2f   (target >= 0.5)"
              % (len(pairs), median([p[0] / s[0] for s, p in pairs])))
        print("refresh PostgreSQL / SQLite, median of %d paired rounds:   %.2f   (target >= 1.0)"
              % (len(pairs), median([p[1] / s[1] for s, p in pairs])))
        sqlite_refresh = median([s[1] for s, p in pairs])
        pg_refresh = median([p[1] for s, p in pairs])
        print("SQLite: one-row commits/s (sqlite3, WAL, synchronous=FULL) %.0f; refresh/s %.0f (median of the pairs): %.2f x   "
              "(target >= 2)" % (commit_rates["sqlite"], sqlite_refresh, sqlite_refresh / commit_rates["sqlite"]))
        print("PostgreSQL: one-row commits/s (psql, one connection) %.0f; refresh/s %.0f: %.2f x   (target >= 2); "
              "transactions per WAL flush during the refreshes: %s" % (
                  commit_rates["pg1"], pg_refresh, pg_refresh / commit_rates["pg1"],
                  " ".join("%.1f" % p[2] for s, p in pairs)))


def print_gateway(gateway, rounds):
    """The gateway check per store: ratios of the interleaved rounds, p99 at half the rate, revocation under load."""
    print("-- the gateway check, median of %d interleaved rounds (spread) --" % rounds)
    for key, label in (("sqlite", "SQLite"), ("pg1", "PostgreSQL, 1 node")):
        figures = gateway[key]
        for operation in ("authorize", "introspect"):
            print("%-10s / nginx (%s): %s   (target >= 0.5)" % (operation, label, median_spread(
                [a / n for a, n in zip(figures[operation], figures["nginx"])])))
        print("authorize  / hello (%s): %s" % (label, median_spread([a / h for a, h in zip(figures["authorize"], figures["hello"])])))
        print("hello      / nginx (%s run): %s" % (label, median_spread([h / n for h, n in zip(figures["hello"], figures["nginx"])])))
        paced = figures["paced"]
        print("authorize at about half its rate (%s): %.0f/s, p50 %s, p99 %s" % (label, paced[0], paced[1], paced[2]))
        for nodes, revocations in sorted(figures["revocation"].items()):
            for kind, accepted, took, refused, after in revocations:
                held = accepted and refused == 50 and after["200"] == 0 and after["401"] > 0
                print("revocation under load (%s, %d node%s): attestctl %s returned in %.0f ms; after it, %d of 50 checks on new "
                      "connections and %d of %d on wrk's keep-alive ones answered 401, %d answered 200   (target: no 200; before it: %s)%s"
                      % (label.split(",")[0], nodes, "s" if nodes > 1 else "", kind, took, refused, after["401"],
                         after["200"] + after["401"] + after["other"], after["200"],
                         "200 on every node" if accepted else "NOT 200", "" if held else "   FAILED"))


def median_spread(values):
    """'median (min-max)' of ratios."""
    ordered = sorted(values)
    return "%.2f (%.2f-%.2f)" % (ordered[len(ordered) // 2], ordered[0], ordered[-1])


def print_pinned(pinned):
    """The rates of the pinned rounds (Bench.pinned_attest), one line per round and operation."""
    for index, (challenge, attest, verify) in enumerate(pinned):
        print("%-34s %-11s %10.1f" % ("SQLite, 1 thread on core 0 (r%d)" % (index + 1), "challenge", challenge))
        print("%-34s %-11s %10.1f" % ("SQLite, 1 thread on core 0 (r%d)" % (index + 1), "attest", attest))
        print("%-34s %-11s %10.1f" % ("in-process verifier, core 0 (r%d)" % (index + 1), "verify", verify))


def print_pinned_ratios(pinned):
    """attest / verifier and challenge+attest / verifier: median of the pinned rounds (spread)."""
    print("attest / in-process verifier (1 thread), median of %d rounds: %s   (target >= 0.8)"
          % (len(pinned), median_spread([a / v for _, a, v in pinned])))
    print("challenge+attest / verifier (1 thread), median of %d rounds:  %s"
          % (len(pinned), median_spread([1 / (1 / c + 1 / a) / v for c, a, v in pinned])))


def print_cpu(cpu_us, references, reference_label):
    """attestd's CPU time per operation over each round (microseconds, from /proc/PID/stat), the
    median, and its ratio to the in-process reference where there is one."""
    for operation, values in sorted(cpu_us.items()):
        ordered = sorted(values)
        median = ordered[len(ordered) // 2]
        line = "attestd CPU per %s: median %.0f us over %d rounds (%s)" % (
            operation, median, len(values), ", ".join("%.0f" % value for value in values))
        if references.get(operation):
            reference = sorted(references[operation])[len(references[operation]) // 2]
            line += "; %s %.0f us: %.2f x" % (reference_label, reference, median / reference)
        print(line)
