"""The whole run (no --only-* part, or --only-gateway): nginx and hello as references, the gateway
check, each store's commit rate, the purge, the five operations per store, the large tables, the
pinned attest rounds and the paired rounds; then the report."""

import os
import shutil
import subprocess
import time

from . import database
from .database import expiring_pg, expiring_sqlite, reset_pg
from .parts import measure_scale, now, paired_rounds
from .report import print_gateway, print_pairs, print_pinned, print_pinned_ratios, print_scale, purge_line
from .tools import pg_commit_rate, sqlite_commit_rate, wrk


def start_references(bench, options):
    """nginx's static `return 200` and attest-bench's hello server: (nginx, hello) processes."""
    nginx_dir = os.path.join(bench.work, "nginx")
    os.makedirs(os.path.join(nginx_dir, "logs"))
    with open(os.path.join(nginx_dir, "nginx.conf"), "w") as f:
        f.write("worker_processes 2;\npid %s/nginx.pid;\nerror_log %s/logs/error.log;\nevents { worker_connections 1024; }\n"
                "http { access_log off; server { listen 127.0.0.1:18480; location / { return 200 \"ok\"; } } }\n" % (nginx_dir, nginx_dir))
    nginx = subprocess.Popen(["nginx", "-p", nginx_dir, "-c", os.path.join(nginx_dir, "nginx.conf"), "-g", "daemon off;"])
    hello = subprocess.Popen([os.path.join(options.bin, "attest-bench"), "--hello", "18481"], stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    return nginx, hello


def measure_gateway(bench, options, pg_url):
    """nginx's own rate, then the gateway check per store: (reference (rate, p50, p99), gateway figures)."""
    reference = wrk(options.seconds, ["http://127.0.0.1:18480/"])

    def nginx_rate():
        return wrk(options.seconds, ["http://127.0.0.1:18480/"])[0]
    gateway = {"sqlite": bench.gateway("SQLite", os.path.join(bench.work, "gateway.sqlite"), nginx_rate, 18481, options.rounds)}
    reset_pg()
    gateway["pg1"] = bench.gateway("PostgreSQL", pg_url, nginx_rate, 18481, options.rounds, revocation_nodes=2)
    return reference, gateway


def measure_the_rest(bench, options, pg_url):
    """Everything after the gateway check, as a dict of figures for print_everything."""
    figures = {"commit_rates": {"sqlite": sqlite_commit_rate(bench.work), "pg1": pg_commit_rate()}}
    purge_path = os.path.join(bench.work, "purge.sqlite")
    figures["purges"] = {"sqlite": bench.purge_under_load(purge_path, expiring_sqlite(purge_path))}
    reset_pg()
    figures["purges"]["pg1"] = bench.purge_under_load(pg_url, expiring_pg)
    sqlite = os.path.join(bench.work, "attestd.sqlite")
    small = {
        "sqlite": bench.measure("SQLite, 1 node", sqlite, 1),
    }
    reset_pg()
    small["pg1"] = bench.measure("PostgreSQL, 1 node", pg_url, 1)
    reset_pg()
    small["pg2"] = bench.measure("PostgreSQL, 2 nodes", pg_url, 2)
    figures["small"] = small
    figures["scale"] = measure_scale(bench, options, pg_url, options.scale_rounds)

    # One server thread pinned to core 0 against the verifier alone on core 0 (SQLite).
    figures["pinned"] = bench.pinned_attest(options.attest_rounds)

    # The two PostgreSQL targets once more, on paired rounds: SQLite then PostgreSQL, one right
    # after the other, `--pairs` times; the median ratio decides (one pass moves by 15 % or more
    # from run to run on this machine, and the passes above are minutes apart).
    figures["pairs"] = paired_rounds(bench, options, pg_url)
    return figures


def everything(bench, options, pg_url, started):
    nginx, hello = start_references(bench, options)
    try:
        figures = {}
        figures["reference"], figures["gateway"] = measure_gateway(bench, options, pg_url)
        if options.only_gateway:
            print("date: %s  command: scripts/bench-load %d --only-gateway  (%.0f s in all)" % (
                now(), options.seconds, time.monotonic() - started))
            print_gateway(figures["gateway"], options.rounds)
            return
        figures.update(measure_the_rest(bench, options, pg_url))
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        hello.terminate()
        hello.wait(timeout=10)
        for node in bench.nodes:
            node.stop()
    print_everything(bench, options, started, figures)
    shutil.rmtree(bench.work, ignore_errors=True)


def print_everything(bench, options, started, figures):
    reference, small, pinned = figures["reference"], figures["small"], figures["pinned"]

    def ratio(a, b):
        return "%.2f" % (a / b if b else 0)

    print("== attestd load benchmark ==")
    print("date: %s  nproc: %d  seconds per measurement: %d  command: scripts/bench-load %d  (%.0f s in all)"
          % (now(), os.cpu_count(), options.seconds, options.seconds, time.monotonic() - started))
    print("%-34s %-11s %10s %9s %9s" % ("store", "operation", "per second", "p50", "p99"))
    print("%-34s %-11s %10.1f %9s %9s" % ("nginx static return 200 (ceiling)", "GET /", reference[0], reference[1], reference[2]))
    for label, results, rss in bench.rows:
        bench.report_row(label, results, rss)
    for label, what, milliseconds in bench.operability:
        print("%-34s %-42s %9.1f ms" % (label, what, milliseconds))
    print_pinned(pinned)
    print_gateway(figures["gateway"], options.rounds)
    for key, label in (("sqlite", "SQLite"), ("pg1", "PostgreSQL, 1 node")):
        print("purge of 100,000 tokens expiring at once (%s): %s" % (label, purge_line(figures["purges"][key])))
    print("authorize / nginx (SQLite), single pass:  %s" % ratio(small["sqlite"]["authorize"][0], reference[0]))
    print("authorize PostgreSQL / SQLite (1 node):  %s   (first pass)" % ratio(small["pg1"]["authorize"][0], small["sqlite"]["authorize"][0]))
    print("refresh PostgreSQL / SQLite (1 node):    %s   (first pass)" % ratio(small["pg1"]["refresh"][0], small["sqlite"]["refresh"][0]))
    print_pairs(figures["pairs"], figures["commit_rates"])
    print("refresh 2 nodes / 1 node (PostgreSQL):   %s" % ratio(small["pg2"]["refresh"][0], small["pg1"]["refresh"][0]))
    print("authorize 2 nodes / 1 node (PostgreSQL): %s" % ratio(small["pg2"]["authorize"][0], small["pg1"]["authorize"][0]))
    scale_ratios, scale_peaks, large_purges = figures["scale"]
    print_scale(scale_ratios, scale_peaks, large_purges, database.large_label(options))
    print_pinned_ratios(pinned)
