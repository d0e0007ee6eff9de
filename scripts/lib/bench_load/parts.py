"""The parts a run can be limited to (--only-attest, --only-refresh, --only-purge, --only-stall,
--only-scale), each measuring and then printing its lines, and the rounds the whole run shares
with them (paired_rounds, measure_scale)."""

import os
import shutil
import subprocess
import sys
import time

from . import database
from .database import expiring_pg, expiring_sqlite, reset_pg
from .report import print_cpu, print_pairs, print_pinned, print_pinned_ratios, print_scale, purge_line
from .tools import OPERATIONS, pg_commit_rate, sqlite_commit_rate


def now():
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def paired_rounds(bench, options, pg_url):
    pairs = []
    for index in range(options.pairs):
        sqlite_pair = bench.pair(os.path.join(bench.work, "pair%d.sqlite" % index))
        reset_pg()
        pg_pair = bench.pair(pg_url, wal=True)
        pairs.append((sqlite_pair, pg_pair))
        print("paired round %d: authorize %.1f / %.1f, refresh %.1f / %.1f (SQLite / PostgreSQL)"
              % (index + 1, sqlite_pair[0], pg_pair[0], sqlite_pair[1], pg_pair[1]), file=sys.stderr, flush=True)
    return pairs


def measure_scale(bench, options, pg_url, rounds):
    """Each store's small and large tables in alternating rounds (small, large, small, ...),
    the large ones loaded once: every ratio compares two measurements a minute apart. Then
    the purge of 100,000 tokens expiring among the large tables.
    Returns (ratios: {store: {operation: [large/small per round]}}, peak RSS on the large
    tables per store in KiB, purge figures per store)."""
    large_label = database.large_label(options)
    sizes = database.large_sizes(options)
    large_sqlite = os.path.join(bench.work, "large.sqlite")
    small_pg = pg_url.rsplit("/", 1)[0] + "/attestd_small"
    stores = (("sqlite", "SQLite", os.path.join(bench.work, "small.sqlite"), large_sqlite,
               database.populate_sqlite(large_sqlite, sizes)),
              ("pg1", "PostgreSQL", small_pg, pg_url, database.populate_pg(sizes)))
    wanted = {"both": ("sqlite", "pg1"), "sqlite": ("sqlite",), "postgresql": ("pg1",)}[options.stores]
    stores = [entry for entry in stores if entry[0] in wanted]
    ratios, peaks, purges = {}, {}, {}
    for key, store, small_db, large_db, populate in stores:
        if key == "pg1":
            reset_pg()
            database.reset_pg_small()
        bench.measure("%s, %s (loading)" % (store, large_label), large_db, 1, populate)
        ratios[key] = {operation: [] for operation in OPERATIONS}
        peaks[key] = 0
        for index in range(rounds):
            small = bench.measure("%s, small tables, round %d" % (store, index + 1), small_db, 1)
            large = bench.measure("%s, %s, round %d" % (store, large_label, index + 1), large_db, 1)
            for operation in OPERATIONS:
                ratios[key][operation].append(large[operation][0] / small[operation][0] if small[operation][0] else 0)
            peaks[key] = max(peaks[key], large["rss"])
        purges[key] = bench.purge_under_load(large_db, expiring_sqlite(large_db) if key == "sqlite" else expiring_pg)
        if key == "sqlite":
            os.remove(large_sqlite)
    return ratios, peaks, purges


def only_attest(bench, options, pg_url, started):
    pinned = bench.pinned_attest(options.attest_rounds)
    print("date: %s  command: scripts/bench-load %d --only-attest --attest-rounds %d  (%.0f s in all)" % (
        now(), options.seconds, options.attest_rounds, time.monotonic() - started))
    print_pinned(pinned)
    print_pinned_ratios(pinned)
    print_cpu(bench.cpu_us, {"attest": [1e6 / verify for _, _, verify in pinned]}, "the in-process verifier's time per attestation")
    shutil.rmtree(bench.work, ignore_errors=True)


def only_refresh(bench, options, pg_url, started):
    commit_rates = {"sqlite": sqlite_commit_rate(bench.work), "pg1": pg_commit_rate()}
    pairs = paired_rounds(bench, options, pg_url)
    print("date: %s  command: scripts/bench-load %d --only-refresh --pairs %d  (%.0f s in all)" % (
        now(), options.seconds, options.pairs, time.monotonic() - started))
    print_pairs(pairs, commit_rates)
    service = bench.in_process_refresh()
    print_cpu(bench.cpu_us, {"refresh SQLite": [1e6 / service]},
              "the refresh use case in process on one core (attest-bench --service, SQLite: challenge, assertion, token)")
    for node in bench.nodes:
        node.stop()
    shutil.rmtree(bench.work, ignore_errors=True)


def only_purge(bench, options, pg_url, started):
    purge_path = os.path.join(bench.work, "purge.sqlite")
    results = {}
    if options.stores != "postgresql":
        results["SQLite"] = bench.purge_under_load(purge_path, expiring_sqlite(purge_path))
    if options.stores != "sqlite":
        reset_pg()
        results["PostgreSQL, 1 node"] = bench.purge_under_load(pg_url, expiring_pg)
    print("date: %s  command: scripts/bench-load %d --only-purge --stores %s" % (now(), options.seconds, options.stores))
    for label, figures in results.items():
        print("purge of 100,000 tokens expiring at once (%s): %s" % (label, purge_line(figures)))
    shutil.rmtree(bench.work, ignore_errors=True)


def only_stall(bench, options, pg_url, started):
    results = {}
    for key, label in (("sqlite", "SQLite"), ("postgresql", "PostgreSQL, 1 node")):
        if options.stores not in ("both", key):
            continue

        def database_for(name):
            if key == "sqlite":
                return os.path.join(bench.work, name + ".sqlite")
            reset_pg()
            return pg_url
        busy = bench.checks_beside_a_busy_disk(database_for("busy"), options.stall_mb)
        quiet = bench.checks_beside_a_busy_disk(database_for("quiet"), 0)
        results[label] = (busy, quiet)
    filesystem = subprocess.run(["stat", "-f", "-c", "%T", bench.work], capture_output=True, text=True).stdout.strip()
    print("date: %s  command: scripts/bench-load %d --only-stall --stores %s --stall-mb %d  (windows of 40 s; dd wrote to %s, "
          "a %s file system)" % (now(), options.seconds, options.stores, options.stall_mb, bench.work, filesystem))
    for label, (busy, quiet) in results.items():
        print("authorize beside challenges while dd writes %d MiB (%.0f s) (%s): p99 %s, longest %s, %.0f/s, challenge p99 %s; "
              "without the write: p99 %s, longest %s, %.0f/s, challenge p99 %s   (target: no stall over 50 ms)" % (
                  options.stall_mb, busy[4], label, busy[0], busy[1], busy[2], busy[3], quiet[0], quiet[1], quiet[2], quiet[3]))
    shutil.rmtree(bench.work, ignore_errors=True)


def only_scale(bench, options, pg_url, started):
    ratios, peaks, large_purges = measure_scale(bench, options, pg_url, options.scale_rounds)
    print("date: %s  command: scripts/bench-load %d --only-scale --stores %s --scale-rounds %d  (%.0f s in all)" % (
        now(), options.seconds, options.stores, options.scale_rounds, time.monotonic() - started))
    for label, results, rss in bench.rows:
        bench.report_row(label, results, rss)
    for label, what, milliseconds in bench.operability:
        print("%-34s %-42s %9.1f ms" % (label, what, milliseconds))
    print_scale(ratios, peaks, large_purges, database.large_label(options))
    shutil.rmtree(bench.work, ignore_errors=True)
