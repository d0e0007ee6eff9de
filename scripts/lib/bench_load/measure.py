"""The five operations per store, the pinned attest rounds, the paired rounds, what an operator waits for."""

import os
import re
import subprocess
import sys
import time
import urllib.request

from .tools import OPERATIONS, cpu_per_operation, load, pg_wal_counters, run, wrk


class Measure:
    def measure(self, label, db, count, populate=None):
        """Starts `count` nodes on `db`, measures the five operations, stops them; one row per operation."""
        ports = self.start(db, count)
        client_id = self.integration(db)
        if populate:
            self.stop()
            populate(client_id)
            began = time.monotonic()
            ports = self.start(db, count)
            self.operability.append((label, "attestd start to listening", (time.monotonic() - began) * 1000))
            self.time_operations(label, db, ports[0])
        attest_load = os.path.join(self.bin, "attest-load")
        token = self.token(ports[0], client_id)
        lua = self.introspect_script(token)
        results = {}
        results["authorize"] = wrk(self.seconds, ["http://127.0.0.1:%d/v1/authorize" % p for p in ports],
                                   ["-H", "Authorization: Bearer " + token])
        results["introspect"] = wrk(self.seconds, ["http://127.0.0.1:%d/v1/introspect" % p for p in ports], ["-s", lua])
        for mode, connections in (("challenge", 16), ("refresh", 16), ("attest", 8)):
            out = load(attest_load, mode, ports, client_id, self.state, connections, self.seconds)
            key = "operations_per_second" if mode == "refresh" else "requests_per_second"
            results[mode] = (float(out[key]), out["p50_ms"] + "ms", out["p99_ms"] + "ms", int(out["errors"]))
        rss = self.stop()
        results["rss"] = rss
        self.rows.append((label, results, rss))
        self.report_row(label, results, rss, sys.stderr)  # as it goes: a later failure keeps what was measured
        return results

    def pinned_attest(self, rounds):
        """attestd with one HTTP thread pinned to core 0 (SQLite, fresh database each round),
        attest-load on core 1 (challenges, then attestations), then the in-process verifier alone
        on core 0, in `rounds` alternating rounds: [(challenge/s, attest/s, verify/s)] per round,
        so that each ratio is taken within its round (issue 22 item 5)."""
        attest_load = os.path.join(self.bin, "attest-load")
        figures = []
        for index in range(rounds):
            pinned = os.path.join(self.work, "pinned%d.sqlite" % index)
            ports = self.start(pinned, 1, ["--threads", "1"], cpu=0)
            client_id = self.integration(pinned)
            challenge = float(load(attest_load, "challenge", ports, client_id, self.state, 8, self.seconds, cpu=1)["requests_per_second"])
            attested = cpu_per_operation(
                self.nodes[0].pid, lambda: load(attest_load, "attest", ports, client_id, self.state, 8, self.seconds, cpu=1))
            attest = float(attested["requests_per_second"])
            self.cpu_us.setdefault("attest", []).append(attested["cpu_us_per_operation"])
            self.stop()
            verify = run(["taskset", "-c", "0", os.path.join(self.bin, "attest-bench"), "--seconds", str(self.seconds)])
            verified = float(re.search(r"attestation_verifications_per_second\s+([0-9.]+)", verify).group(1))
            figures.append((challenge, attest, verified))
            print("attest round %d: challenge %.1f attest %.1f verify %.1f (1 thread, core 0)" % (index + 1, challenge, attest, verified),
                  file=sys.stderr, flush=True)
        return figures

    def in_process_refresh(self):
        """Refreshes per second of the use case in process on core 0 (attest-bench --service)."""
        out = run(["taskset", "-c", "0", os.path.join(self.bin, "attest-bench"), "--service", "--seconds", str(self.seconds)])
        return float(re.search(r"service_refreshes_per_second\s+([0-9.]+)", out).group(1))

    def pair(self, db, wal=False):
        """One node on `db`: (authorize/s, refresh/s, transaction commits per WAL flush during the
        refreshes or None), for the paired rounds."""
        ports = self.start(db, 1)
        client_id = self.integration(db)
        attest_load = os.path.join(self.bin, "attest-load")
        token = self.token(ports[0], client_id)
        authorize = wrk(self.seconds, ["http://127.0.0.1:%d/v1/authorize" % ports[0]], ["-H", "Authorization: Bearer " + token])[0]
        before = pg_wal_counters() if wal else None
        refreshed = cpu_per_operation(
            self.nodes[0].pid, lambda: load(attest_load, "refresh", ports, client_id, self.state, 16, self.seconds))
        refresh = float(refreshed["operations_per_second"])
        self.cpu_us.setdefault("refresh " + ("PostgreSQL" if db.startswith("postgresql") else "SQLite"), []).append(
            refreshed["cpu_us_per_operation"])
        after = pg_wal_counters() if wal else None
        self.stop()
        shared = (after[0] - before[0]) / max(1, after[1] - before[1]) if wal else None
        return authorize, refresh, shared

    def time_operations(self, label, db, port):
        """What an operator waits for at scale: a /metrics scrape (median of 20) and attestctl commands."""
        scrapes = []
        for _ in range(20):
            began = time.monotonic()
            with urllib.request.urlopen("http://127.0.0.1:%d/metrics" % port, timeout=30) as answer:
                answer.read()
            scrapes.append((time.monotonic() - began) * 1000)
        self.operability.append((label, "GET /metrics (median of 20)", sorted(scrapes)[10]))
        attestctl = os.path.join(self.bin, "attestctl")
        for what, args in (("attestctl integration list", ["integration", "list"]),
                           ("attestctl token revoke --sha256 (unknown)", ["token", "revoke", "--sha256", "00" * 32, "--actor", "bench"]),
                           ("attestctl check (reads everything)", ["check"])):
            began = time.monotonic()
            subprocess.run([attestctl, *args, "--db", db], capture_output=True, timeout=600)
            self.operability.append((label, what, (time.monotonic() - began) * 1000))

    def report_row(self, label, results, rss, out=sys.stdout):
        for operation in OPERATIONS:
            value = results[operation]
            errors = " errors %d" % value[3] if len(value) > 3 and value[3] else ""
            print("%-34s %-11s %10.1f %9s %9s%s" % (label, operation, value[0], value[1], value[2], errors), file=out, flush=True)
        print("%-34s %-11s %10d MiB" % (label, "peak RSS", rss // 1024), file=out, flush=True)
