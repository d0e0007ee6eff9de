"""The command line, and which part of the benchmark runs."""

import argparse
import os
import time

from .bench import Bench
from .everything import everything
from .parts import only_attest, only_purge, only_refresh, only_scale, only_stall


def parse_options():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--seconds", type=int, default=5)
    parser.add_argument("--pairs", type=int, default=3, help="paired SQLite/PostgreSQL rounds for the two PostgreSQL targets")
    parser.add_argument("--rounds", type=int, default=5, help="interleaved rounds of nginx, hello, authorize and introspect per store")
    parser.add_argument("--only-purge", action="store_true", help="only the purge of 100,000 expiring tokens, on both stores")
    parser.add_argument("--only-scale", action="store_true", help="only the small and the large tables, on both stores")
    parser.add_argument("--only-gateway", action="store_true", help="only the gateway check's interleaved rounds, on both stores")
    parser.add_argument("--only-attest", action="store_true",
                        help="only attest over HTTP (1 thread on core 0) against the in-process verifier, in alternating rounds")
    parser.add_argument("--only-refresh", action="store_true",
                        help="only each store's commit rate and the paired rounds (refresh against it, both stores)")
    parser.add_argument("--only-stall", action="store_true",
                        help="only the gateway check beside challenges while dd fills the disk, and without (both stores, or --stores)")
    parser.add_argument("--stall-mb", type=int, default=6000,
                        help="MiB dd writes in --only-stall (to this run's temporary directory: a disk, not a tmpfs, for a stall)")
    parser.add_argument("--attest-rounds", type=int, default=3, help="alternating rounds of attest over HTTP and the verifier")
    parser.add_argument("--large-tokens", type=int, default=10000000, help="live tokens in the large tables")
    parser.add_argument("--large-devices", type=int, default=1000000, help="devices in the large tables")
    parser.add_argument("--stores", choices=("both", "sqlite", "postgresql"), default="both",
                        help="the stores --only-scale, --only-purge and --only-stall measure")
    parser.add_argument("--scale-rounds", type=int, default=3, help="alternating rounds of the small and the large tables per store")
    return parser.parse_args()


def main():
    options = parse_options()
    started = time.monotonic()
    bench = Bench(options)
    pg_url = os.environ["PG_URL"]
    for wanted, part in ((options.only_attest, only_attest), (options.only_refresh, only_refresh), (options.only_purge, only_purge),
                         (options.only_stall, only_stall), (options.only_scale, only_scale)):
        if wanted:
            part(bench, options, pg_url, started)
            return
    everything(bench, options, pg_url, started)
