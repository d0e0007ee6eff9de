"""The load benchmark behind scripts/bench-load (which builds the release binaries, installs nginx,
wrk and sqlite3, and starts a throwaway PostgreSQL cluster: PG_URL, PG_BIN, PG_DIR, PG_PORT).

Every figure is printed beside references measured in the same run:
  - nginx serving a static `return 200` (the HTTP ceiling of this machine), with wrk, and
    attestd's own HTTP server answering 200 with nothing behind it (`attest-bench --hello`, the
    second ceiling: libmicrohttpd and its wrapper);
  - the gateway check in interleaved rounds (--rounds, default 5): nginx, hello, authorize and
    introspect one after the other, per store (SQLite, PostgreSQL one node); the median ratio and
    its spread decide, then authorize's p99 at about half its maximum rate, and the four
    revocations under load (`attestctl integration revoke`, `token revoke`, `device block` and
    `integration suspend`, each while wrk checks its token; after it returned, 50 checks on new
    connections and one second of wrk on keep-alive ones must all be 401), on one node, and on
    PostgreSQL on two nodes too (load and checks on both);
  - each store's own single-transaction commit rate (a loop of one-row INSERT + COMMIT on the
    same file system or cluster, same durability), beside refresh/s, and how many commits shared
    one flush (SQLite: attestd's group commit; PostgreSQL: pg_stat_wal's flushes);
  - for each store: SQLite (one node), PostgreSQL (one node), PostgreSQL (two nodes on the same
    database, the load spread over both): GET /v1/authorize and POST /v1/introspect (wrk, 64
    connections), POST /v1/challenge, refresh (challenge + assertion + token) and attest (prepared
    objects) with attest-load;
  - the same on tables of 10,000,000 live tokens and 1,000,000 devices (--large-tokens,
    --large-devices), per store, with what an operator waits for at that size (start, a /metrics
    scrape, attestctl commands), the purge of 100,000 tokens expiring at once in them (30 s of
    load during it, then 30 s of the same load with nothing to purge, the reference), and the
    peak RSS (target <= 64 MiB), in alternating rounds of small and large tables (--scale-rounds,
    default 3; the median ratio decides); --only-scale runs this part alone;
  - SQLite with one HTTP thread pinned to core 0 against the in-process verifier on core 0, in
    alternating rounds (--attest-rounds, default 3: attest over HTTP, then the verifier; the
    median ratio decides); --only-attest runs this part alone;
  - paired rounds (--pairs, default 3): SQLite then PostgreSQL, one node each, authorize and refresh,
    one right after the other; the median of the rounds' ratios is what the PostgreSQL targets
    are judged on (a single pass moves by 15 % or more from run to run here); --only-refresh runs
    them alone, after each store's commit rate;
  - --only-stall: the gateway check beside a busy disk: authorize of one live token (answered from
    memory) beside challenges on one node, while dd writes --stall-mb MiB (default 6,000) buffered
    to the same disk and flushes them, then the same load without it (the reference), per store:
    no check should wait behind another request's statement (target: no stall over 50 ms).
Targets (issue figures): authorize and introspect >= 0.5 x nginx (median of the rounds, both
stores); refresh/s >= 2 x the store's commit rate; refresh on PostgreSQL >= SQLite's; authorize on
PostgreSQL >= 0.5 x SQLite's; attest >= 0.8 x the in-process verifier for the same threads.
"""

import argparse
import http.client
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "lib"))
from attestd_testlib import Attestd  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SECRET = "gateway-secret-for-the-benchmark-0123456789"
# What an operator can take away, each measured under load (Bench.revocations_under_load).
REVOCATIONS = ("integration revoke", "token revoke", "device block", "integration suspend")
# A wrk script that counts the answers' statuses over all its threads and prints them.
STATUS_COUNTER = """local threads = {}
function setup(thread) table.insert(threads, thread) end
function init(args) ok = 0; refused = 0; other = 0 end
function response(status, headers, body)
  if status == 200 then ok = ok + 1 elseif status == 401 then refused = refused + 1 else other = other + 1 end
end
function done(summary, latency, requests)
  local a, b, c = 0, 0, 0
  for _, t in ipairs(threads) do a = a + t:get("ok"); b = b + t:get("refused"); c = c + t:get("other") end
  io.write(string.format("statuses 200=%d 401=%d other=%d\\n", a, b, c))
end
"""
OPERATIONS = ("authorize", "introspect", "challenge", "refresh", "attest")
APP_ID = "ABCDE12345.com.example.bench"
DEVICE_COLUMNS = "key_id, client_id, public_key, counter, environment, receipt, status, created_at, updated_at"
TOKEN_COLUMNS = "token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at"


def run(args, **kwargs):
    return subprocess.run(args, capture_output=True, text=True, check=True, timeout=600, **kwargs).stdout


def wrk(seconds, urls, extra=()):
    """wrk on every URL at once (2 threads, 64 connections in all): (requests/s summed, worst p50, worst p99)."""
    procs = [subprocess.Popen(wrk_share(seconds, url, len(urls), ["--latency", *extra]), stdout=subprocess.PIPE, text=True)
             for url in urls]
    rate, p50, p99 = 0.0, "", ""
    for proc in procs:
        out = proc.communicate(timeout=seconds + 60)[0]
        rate += float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1))
        p50 = max(p50, re.search(r"\s50%\s+(\S+)", out).group(1))
        p99 = max(p99, re.search(r"\s99%\s+(\S+)", out).group(1))
    return rate, p50, p99


def wrk_share(seconds, url, nodes, extra=()):
    """The wrk command for one of `nodes` URLs loaded at once: its share of 2 threads and 64 connections."""
    return ["wrk", "-t%d" % max(1, 2 // nodes), "-c%d" % (64 // nodes), "-d%ds" % seconds, *extra, url]


def check_status(url, token):
    """The status of one authorize of `token` at `url`, on a connection of its own; None when no
    answer came (a reset, a timeout): neither a 200 nor a 401."""
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers={"Authorization": "Bearer " + token}), timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as error:
        return error.code
    except (urllib.error.URLError, OSError, http.client.HTTPException):
        return None


def count_label(count):
    """10000000 -> '10M', 200000 -> '200k'."""
    if count % 1000000 == 0:
        return "%dM" % (count // 1000000)
    return "%dk" % (count // 1000) if count % 1000 == 0 else str(count)


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


def paced_p99(seconds, url, extra, rate, work):
    """wrk with a per-request pause that holds 64 connections near `rate` requests/s (wrk's Lua
    delay(), whole milliseconds): (achieved requests/s, p50, p99)."""
    pause_ms = max(1, round(64 * 1000.0 / rate))
    script = os.path.join(work, "paced.lua")
    with open(script, "w") as f:
        f.write("function delay()\n  return %d\nend\n" % pause_ms)
    return wrk(seconds, [url], list(extra) + ["-s", script])


def sqlite_commit_rate(directory, count=2000):
    """One-row INSERT + COMMIT in a loop with the sqlite3 shell, WAL and synchronous=FULL as attestd
    commits its durable writes, on the same file system: commits per second."""
    path = os.path.join(directory, "commit-rate.sqlite")
    script = "PRAGMA journal_mode=WAL; PRAGMA synchronous=FULL; CREATE TABLE t (a INTEGER PRIMARY KEY, b BLOB);\n" + \
        "INSERT INTO t (b) VALUES (randomblob(100));\n" * count
    began = time.monotonic()
    subprocess.run(["sqlite3", path], input=script, text=True, check=True, capture_output=True, timeout=600)
    rate = count / (time.monotonic() - began)
    for suffix in ("", "-wal", "-shm"):
        try:
            os.remove(path + suffix)
        except OSError:
            pass
    return rate


def pg_commit_rate(count=2000):
    """One-row INSERT + COMMIT in a loop over one connection (psql, autocommit), on the cluster
    attestd uses with its settings: commits per second."""
    psql = os.path.join(os.environ["PG_BIN"], "psql")
    url = os.environ["PG_URL"]
    run([psql, "-q", "-X", url, "-c", "DROP TABLE IF EXISTS bench_commit_rate", "-c",
         "CREATE TABLE bench_commit_rate (a bigserial PRIMARY KEY, b bytea)"])
    script = "INSERT INTO bench_commit_rate (b) VALUES (gen_random_bytes(100));\n" * count
    script = script.replace("gen_random_bytes(100)", "decode(md5(random()::text), 'hex')")
    began = time.monotonic()
    subprocess.run([psql, "-q", "-X", url], input=script, text=True, check=True, capture_output=True, timeout=600)
    rate = count / (time.monotonic() - began)
    run([psql, "-q", "-X", url, "-c", "DROP TABLE bench_commit_rate"])
    return rate


def pg_wal_counters():
    """(transactions committed in the attestd database, WAL flushes of the cluster)."""
    psql = os.path.join(os.environ["PG_BIN"], "psql")
    out = run([psql, "-q", "-X", "-At", os.environ["PG_URL"], "-c",
               "SELECT (SELECT xact_commit FROM pg_stat_database WHERE datname = current_database()), wal_sync FROM pg_stat_wal"])
    commits, syncs = out.strip().split("|")
    return int(commits), int(syncs)


def load(binary, mode, ports, client_id, state, connections, seconds, cpu=None):
    command = [binary, mode, "--port", ",".join(map(str, ports)), "--client-id", client_id, "--app-id", APP_ID, "--state", state,
               "--connections", str(connections), "--seconds", str(seconds)]
    if cpu is not None:
        command = ["taskset", "-c", str(cpu)] + command
    out = run(command)
    return dict(line.split(" ", 1) for line in out.strip().splitlines() if " " in line)


class Bench:
    def __init__(self, options):
        self.bin = options.bin
        self.seconds = options.seconds
        self.work = tempfile.mkdtemp(prefix="bench-load.")
        self.state = os.path.join(self.work, "state")
        self.anchor = os.path.join(self.work, "anchor.pem")
        self.secret = os.path.join(self.work, "secret")
        with open(self.secret, "w") as f:
            f.write(SECRET + "\n")
        run([os.path.join(self.bin, "attestctl"), "simulate", "--write-trust-anchor", self.anchor, "--state", self.state])
        self.rows = []
        self.nodes = []
        self.operability = []  # (label, what, milliseconds) on the large tables

    def start(self, db, count=1, extra=(), cpu=None):
        self.nodes = []
        for index in range(count):
            binary = os.path.join(self.bin, "attestd")
            # Every load comes from 127.0.0.1, as from a proxy: no per-address rate or connection cap (the
            # default cap of 32 would reset half of wrk's 64 connections and measure reconnects).
            args = ["--db", db, "--trust-anchor", self.anchor, "--address-rate", "0", "--attest-rate", "0", "--challenge-rate", "0",
                    "--connections-per-address", "0",
                    "--gateway-secret-file", self.secret, *extra]
            node = Attestd(binary, os.path.join(self.work, "node%d-%d.log" % (index, time.monotonic_ns())), args,
                           stdout=subprocess.DEVNULL, start_seconds=30)
            if cpu is not None:  # every thread of the process, the HTTP pool included
                run(["taskset", "-a", "-p", "-c", str(cpu), str(node.pid)])
            if not node.started():
                raise RuntimeError("attestd did not start: " + node.log_text()[-2000:])
            self.nodes.append(node)
        return [node.port for node in self.nodes]

    def stop(self):
        peak = max((self.peak_rss(node.pid) for node in self.nodes), default=0)
        for node in self.nodes:
            node.stop()
        self.nodes = []
        return peak

    @staticmethod
    def peak_rss(pid):
        try:
            with open("/proc/%d/status" % pid) as f:
                return int(next(line.split()[1] for line in f if line.startswith("VmHWM")))
        except (OSError, StopIteration):
            return 0

    def integration(self, db):
        return run([os.path.join(self.bin, "attestctl"), "integration", "create", "--db", db, "--workspace", "ws_bench", "--name",
                    "bench", "--team-id", "ABCDE12345", "--bundle-id", "com.example.bench", "--environment", "production"]).strip()

    def token(self, port, client_id):
        """A live access token of a synthetic device attested through the node on `port`."""
        return run([os.path.join(self.bin, "attest-load"), "token", "--port", str(port), "--client-id", client_id, "--app-id",
                    APP_ID, "--state", self.state]).strip()

    def introspect_script(self, token):
        """A wrk script that introspects `token` with the gateway secret; its path."""
        lua = os.path.join(self.work, "introspect.lua")
        with open(lua, "w") as f:
            f.write('wrk.method = "POST"\nwrk.body = "token=%s"\nwrk.headers["Content-Type"] = "application/x-www-form-urlencoded"\n'
                    'wrk.headers["Authorization"] = "Bearer %s"\n' % (token, SECRET))
        return lua

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

    def gateway(self, label, db, reference, hello_port, rounds, revocation_nodes=1):
        """Interleaved rounds on one node: nginx, hello, authorize, introspect; then authorize's
        p99 near half its rate and the four revocations under load, on that node and, when
        `revocation_nodes` is more, on as many nodes sharing the database. Returns a dict of figures."""
        ports = self.start(db, 1)
        client_id = self.integration(db)
        token = self.token(ports[0], client_id)
        lua = self.introspect_script(token)
        authorize_url = "http://127.0.0.1:%d/v1/authorize" % ports[0]
        bearer = ["-H", "Authorization: Bearer " + token]
        figures = {"nginx": [], "hello": [], "authorize": [], "introspect": []}
        for index in range(rounds):
            nginx = reference()
            hello = wrk(self.seconds, ["http://127.0.0.1:%d/" % hello_port])[0]
            authorize = wrk(self.seconds, [authorize_url], bearer)[0]
            introspect = wrk(self.seconds, ["http://127.0.0.1:%d/v1/introspect" % ports[0]], ["-s", lua])[0]
            for key, value in (("nginx", nginx), ("hello", hello), ("authorize", authorize), ("introspect", introspect)):
                figures[key].append(value)
            print("%s round %d: nginx %.0f hello %.0f authorize %.0f introspect %.0f" % (label, index + 1, nginx, hello, authorize,
                                                                                        introspect), file=sys.stderr, flush=True)
        peak = sorted(figures["authorize"])[len(figures["authorize"]) // 2]
        figures["paced"] = paced_p99(self.seconds, authorize_url, bearer, peak / 2, self.work)
        figures["revocation"] = {1: self.revocations_under_load(db, ports)}
        self.stop()
        if revocation_nodes > 1:  # no node answers 200 once a revocation has returned
            figures["revocation"][revocation_nodes] = self.revocations_under_load(db, self.start(db, revocation_nodes))
            self.stop()
        return figures

    def revocations_under_load(self, db, ports):
        """Each of the four revocations on its own integration while wrk checks its token on every
        node in `ports` as fast as it can. After the command returned, while that load still runs:
        50 checks on connections of their own, spread over the nodes, then one second of wrk on
        every node over 16 keep-alive connections each (spread over its HTTP threads as it accepts
        them), counting the statuses. One (command, whether a check on each node answered 200 just
        before it, milliseconds attestctl took, 401s of the 50 checks, wrk's statuses after it:
        {200, 401, other}) per revocation."""
        attestctl = os.path.join(self.bin, "attestctl")
        counter = os.path.join(self.work, "statuses.lua")
        with open(counter, "w") as f:
            f.write(STATUS_COUNTER)
        results = []
        for kind in REVOCATIONS:
            client_id = self.integration(db)
            token = self.token(ports[0], client_id)
            if kind == "integration revoke":
                command = ["integration", "revoke", client_id, "--yes"]
            elif kind == "token revoke":
                command = ["token", "revoke", token]
            elif kind == "device block":
                listed = json.loads(run([attestctl, "device", "list", "--client-id", client_id, "--json", "--db", db]))
                if len(listed) != 1:
                    raise RuntimeError("expected the one device of %s, got %r" % (client_id, listed))
                command = ["device", "block", listed[0]["key_id_hex"]]
            else:
                command = ["integration", "suspend", client_id]
            urls = ["http://127.0.0.1:%d/v1/authorize" % port for port in ports]
            bearer = ["-H", "Authorization: Bearer " + token]
            loads = [subprocess.Popen(wrk_share(self.seconds + 4, url, len(urls), bearer), stdout=subprocess.DEVNULL) for url in urls]
            try:
                time.sleep(2)
                # The token must work everywhere first, or the 401s after the command prove nothing.
                accepted = all(check_status(url, token) == 200 for url in urls)
                began = time.monotonic()
                run([attestctl, *command, "--actor", "bench", "--db", db])
                took = (time.monotonic() - began) * 1000
                refused = sum(check_status(urls[index % len(urls)], token) == 401 for index in range(50))
                after = [subprocess.Popen(["wrk", "-t1", "-c16", "-d1s", "-s", counter, url, *bearer], stdout=subprocess.PIPE, text=True)
                         for url in urls]
                statuses = {"200": 0, "401": 0, "other": 0}
                for proc in after:
                    counted = re.search(r"statuses 200=(\d+) 401=(\d+) other=(\d+)", proc.communicate(timeout=60)[0]).groups()
                    for key, value in zip(("200", "401", "other"), counted):
                        statuses[key] += int(value)
            except BaseException:
                for proc in loads:
                    proc.terminate()
                raise
            finally:
                for proc in loads:
                    proc.wait(timeout=self.seconds + 60)
            results.append((kind, accepted, took, refused, statuses))
        return results

    def purge_under_load(self, db, sql_runner, seconds=30):
        """100,000 tokens expiring at once, deleted by the purge (every second here) while wrk
        checks a live token and attest-load asks for challenges (writes); then the same load beside
        100,000 tokens that expire in ten hours, nothing to purge: the reference (this load alone
        fills both cores, and its own tail is tens of milliseconds at 10 M tokens).
        Returns (authorize p99, challenge p99, rows the purge removed, the reference's authorize
        p99, the reference's challenge p99)."""
        authorize, challenge, removed = self.load_beside_tokens(db, sql_runner, 3, seconds)
        reference_authorize, reference_challenge, _ = self.load_beside_tokens(db, sql_runner, 36000, seconds)
        return authorize, challenge, removed, reference_authorize, reference_challenge

    def load_beside_tokens(self, db, sql_runner, expires_in, seconds):
        """One node purging every second, 100,000 tokens expiring `expires_in` s from now, and the load."""
        ports = self.start(db, 1, ["--purge-interval", "1"])
        client_id = self.integration(db)
        attest_load = os.path.join(self.bin, "attest-load")
        token = self.token(ports[0], client_id)
        # Issued an hour before they expire: the insert may start seconds after this line (a
        # large file), and a token issued after its expiry breaks the tables' CHECK.
        sql_runner(client_id, int(time.time()) + expires_in)
        wrk_run = subprocess.Popen(["wrk", "-t1", "-c32", "-d%ds" % seconds, "--latency", "-H", "Authorization: Bearer " + token,
                                    "http://127.0.0.1:%d/v1/authorize" % ports[0]], stdout=subprocess.PIPE, text=True)
        challenges = load(attest_load, "challenge", ports, client_id, self.state, 4, seconds)
        out = wrk_run.communicate(timeout=seconds + 60)[0]
        log = self.nodes[0].log_text()
        self.stop()
        removed = sum(int(m) for m in re.findall(r'"msg":"purged expired rows","rows":(\d+)', log))
        return re.search(r"\s99%\s+(\S+)", out).group(1), challenges["p99_ms"] + "ms", removed

    def checks_beside_a_busy_disk(self, db, megabytes, seconds=40):
        """One node: wrk checks one live token (answered from memory) while attest-load asks for
        challenges (4 connections, an insert each); from the 5th second dd writes `megabytes` MiB
        to this run's directory, buffered, and flushes them (conv=fsync): the disk the store's
        files, the node's log and the database server's WAL are on. Returns (authorize p99, the
        longest check, checks/s, challenge p99, the seconds dd took)."""
        ports = self.start(db, 1)
        client_id = self.integration(db)
        token = self.token(ports[0], client_id)
        wrk_run = subprocess.Popen(["wrk", "-t1", "-c32", "-d%ds" % seconds, "--latency", "-H", "Authorization: Bearer " + token,
                                    "http://127.0.0.1:%d/v1/authorize" % ports[0]], stdout=subprocess.PIPE, text=True)
        challenges = subprocess.Popen([os.path.join(self.bin, "attest-load"), "challenge", "--port", str(ports[0]), "--client-id",
                                       client_id, "--app-id", APP_ID, "--state", self.state, "--connections", "4", "--seconds",
                                       str(seconds)], stdout=subprocess.PIPE, text=True)
        time.sleep(5)
        hog = os.path.join(self.work, "busy-disk")
        began = time.monotonic()
        if megabytes:
            subprocess.run(["dd", "if=/dev/zero", "of=" + hog, "bs=1M", "count=%d" % megabytes, "conv=fsync"], check=True,
                           stderr=subprocess.DEVNULL, timeout=600)
        took = time.monotonic() - began
        out = wrk_run.communicate(timeout=seconds + 600)[0]
        challenge_out = dict(line.split(" ", 1) for line in challenges.communicate(timeout=60)[0].strip().splitlines() if " " in line)
        self.stop()
        if megabytes:
            os.remove(hog)
        return (re.search(r"\s99%\s+(\S+)", out).group(1), re.search(r"Latency\s+\S+\s+\S+\s+(\S+)", out).group(1),
                float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1)), challenge_out["p99_ms"] + "ms", took)

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
            attest = float(load(attest_load, "attest", ports, client_id, self.state, 8, self.seconds, cpu=1)["requests_per_second"])
            self.stop()
            verify = run(["taskset", "-c", "0", os.path.join(self.bin, "attest-bench"), "--seconds", str(self.seconds)])
            verified = float(re.search(r"attestation_verifications_per_second\s+([0-9.]+)", verify).group(1))
            figures.append((challenge, attest, verified))
            print("attest round %d: challenge %.1f attest %.1f verify %.1f (1 thread, core 0)" % (index + 1, challenge, attest, verified),
                  file=sys.stderr, flush=True)
        return figures

    def pair(self, db, wal=False):
        """One node on `db`: (authorize/s, refresh/s, transaction commits per WAL flush during the
        refreshes or None), for the paired rounds."""
        ports = self.start(db, 1)
        client_id = self.integration(db)
        attest_load = os.path.join(self.bin, "attest-load")
        token = self.token(ports[0], client_id)
        authorize = wrk(self.seconds, ["http://127.0.0.1:%d/v1/authorize" % ports[0]], ["-H", "Authorization: Bearer " + token])[0]
        before = pg_wal_counters() if wal else None
        refresh = float(load(attest_load, "refresh", ports, client_id, self.state, 16, self.seconds)["operations_per_second"])
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


def main():
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
    options = parser.parse_args()
    started = time.monotonic()
    bench = Bench(options)
    pg_url = os.environ["PG_URL"]
    admin = ". scripts/lib/deps.sh; . scripts/lib/postgres.sh; "

    def reset_pg():
        subprocess.run(["bash", "-c", admin + 'attestd_psql_admin postgres "DROP DATABASE IF EXISTS attestd WITH (FORCE)" '
                        '"CREATE DATABASE attestd OWNER attestd"'], cwd=ROOT, check=True, timeout=120, stdout=subprocess.DEVNULL)

    large_label = "%s tokens/%s devices" % (count_label(options.large_tokens), count_label(options.large_devices))
    sizes = {"dc": DEVICE_COLUMNS, "tc": TOKEN_COLUMNS, "d": options.large_devices, "t": options.large_tokens}

    def populate_pg(client_id):
        sql = ("INSERT INTO devices (%(dc)s) SELECT sha256(int8send(i)), '%(c)s', "
               "'\\x04'::bytea || sha256(int8send(i)) || sha256(int8send(-i)), 0, 'production', ''::bytea, 'active', 0, 0 "
               "FROM generate_series(1, %(d)d) i; "
               "INSERT INTO tokens (%(tc)s) SELECT sha256(int8send(i) || '\\x74'::bytea), '%(c)s', 'ws_bench', "
               "sha256(int8send(i %% %(d)d + 1)), 'messages', extract(epoch from now())::bigint, extract(epoch from now())::bigint + 3600 "
               "FROM generate_series(1, %(t)d) i;" % dict(sizes, c=client_id))
        # Vacuumed and checkpointed, as tables are in a steady state: otherwise autovacuum and the
        # checkpointer work through the bulk load during the measurement (one run measured
        # authorize at half the small tables' rate for that reason alone).
        subprocess.run(["bash", "-c", admin + 'attestd_psql_admin attestd "$0" "VACUUM ANALYZE" "CHECKPOINT"', sql], cwd=ROOT, check=True,
                       timeout=3600, stdout=subprocess.DEVNULL)

    def populate_sqlite(path):
        def populate(client_id):
            # 4,000-byte receipts, as Apple's are (a million devices: a file of about 8 GB). Loaded
            # without the write-ahead log and with a large cache (attestd turns WAL back on at start).
            sql = ("PRAGMA journal_mode=DELETE; PRAGMA synchronous=OFF; PRAGMA cache_size=-4000000; "
                   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %(d)d) "
                   "INSERT INTO devices (%(dc)s) SELECT randomblob(32), '%(c)s', randomblob(65), 0, 'production', "
                   "randomblob(4000), 'active', 0, 0 FROM n; "
                   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %(t)d) "
                   "INSERT INTO tokens (%(tc)s) SELECT randomblob(32), '%(c)s', 'ws_bench', randomblob(32), 'messages', "
                   "unixepoch(), unixepoch() + 3600 FROM n; ANALYZE; PRAGMA journal_mode=WAL;" % dict(sizes, c=client_id))
            subprocess.run(["sqlite3", path, sql], check=True, timeout=3600, stdout=subprocess.DEVNULL)
        return populate

    def expiring_sqlite(path):
        def insert(client_id, expires_at):
            sql = ("INSERT INTO devices (%(dc)s) VALUES (randomblob(32), '%(c)s', randomblob(65), 0, 'production', x'', 'active', 0, 0); "
                   "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "
                   "INSERT INTO tokens (%(tc)s) SELECT randomblob(32), '%(c)s', 'ws_bench', "
                   "(SELECT key_id FROM devices WHERE client_id = '%(c)s' AND receipt = x'' LIMIT 1), 'messages', %(e)d - 3600, %(e)d "
                   "FROM n;" % {"c": client_id, "e": expires_at, "dc": DEVICE_COLUMNS, "tc": TOKEN_COLUMNS})
            subprocess.run(["sqlite3", path, sql], check=True, timeout=600)
        return insert

    def expiring_pg(client_id, expires_at):
        # The device's key and the tokens' hashes are derived from the integration's client ID:
        # the purge and its reference insert a set each, into one database.
        sql = ("INSERT INTO devices (%(dc)s) VALUES (sha256(convert_to('purge %(c)s', 'UTF8')), '%(c)s', "
               "'\\x04'::bytea || sha256('a'::bytea) || sha256('b'::bytea), 0, 'production', ''::bytea, 'active', 0, 0); "
               "INSERT INTO tokens (%(tc)s) SELECT sha256(int8send(i) || convert_to('%(c)s', 'UTF8')), '%(c)s', 'ws_bench', "
               "sha256(convert_to('purge %(c)s', 'UTF8')), 'messages', %(e)d - 3600, %(e)d FROM generate_series(1, 100000) i;"
               % {"c": client_id, "e": expires_at, "dc": DEVICE_COLUMNS, "tc": TOKEN_COLUMNS})
        subprocess.run(["bash", "-c", admin + 'attestd_psql_admin attestd "$0"', sql], cwd=ROOT, check=True, timeout=600,
                       stdout=subprocess.DEVNULL)

    if options.only_attest:
        pinned = bench.pinned_attest(options.attest_rounds)
        print("date: %s  command: scripts/bench-load %d --only-attest --attest-rounds %d  (%.0f s in all)" % (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), options.seconds, options.attest_rounds, time.monotonic() - started))
        print_pinned(pinned)
        print_pinned_ratios(pinned)
        shutil.rmtree(bench.work, ignore_errors=True)
        return

    def paired_rounds():
        pairs = []
        for index in range(options.pairs):
            sqlite_pair = bench.pair(os.path.join(bench.work, "pair%d.sqlite" % index))
            reset_pg()
            pg_pair = bench.pair(pg_url, wal=True)
            pairs.append((sqlite_pair, pg_pair))
            print("paired round %d: authorize %.1f / %.1f, refresh %.1f / %.1f (SQLite / PostgreSQL)"
                  % (index + 1, sqlite_pair[0], pg_pair[0], sqlite_pair[1], pg_pair[1]), file=sys.stderr, flush=True)
        return pairs

    if options.only_refresh:
        commit_rates = {"sqlite": sqlite_commit_rate(bench.work), "pg1": pg_commit_rate()}
        pairs = paired_rounds()
        print("date: %s  command: scripts/bench-load %d --only-refresh --pairs %d  (%.0f s in all)" % (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), options.seconds, options.pairs, time.monotonic() - started))
        print_pairs(pairs, commit_rates)
        for node in bench.nodes:
            node.stop()
        shutil.rmtree(bench.work, ignore_errors=True)
        return

    if options.only_purge:
        purge_path = os.path.join(bench.work, "purge.sqlite")
        results = {}
        if options.stores != "postgresql":
            results["SQLite"] = bench.purge_under_load(purge_path, expiring_sqlite(purge_path))
        if options.stores != "sqlite":
            reset_pg()
            results["PostgreSQL, 1 node"] = bench.purge_under_load(pg_url, expiring_pg)
        print("date: %s  command: scripts/bench-load %d --only-purge --stores %s" % (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), options.seconds, options.stores))
        for label, figures in results.items():
            print("purge of 100,000 tokens expiring at once (%s): %s" % (label, purge_line(figures)))
        shutil.rmtree(bench.work, ignore_errors=True)
        return

    if options.only_stall:
        results = {}
        for key, label in (("sqlite", "SQLite"), ("postgresql", "PostgreSQL, 1 node")):
            if options.stores not in ("both", key):
                continue
            def database(name):
                if key == "sqlite":
                    return os.path.join(bench.work, name + ".sqlite")
                reset_pg()
                return pg_url
            busy = bench.checks_beside_a_busy_disk(database("busy"), options.stall_mb)
            quiet = bench.checks_beside_a_busy_disk(database("quiet"), 0)
            results[label] = (busy, quiet)
        filesystem = subprocess.run(["stat", "-f", "-c", "%T", bench.work], capture_output=True, text=True).stdout.strip()
        print("date: %s  command: scripts/bench-load %d --only-stall --stores %s --stall-mb %d  (windows of 40 s; dd wrote to %s, "
              "a %s file system)" % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), options.seconds, options.stores,
                                     options.stall_mb, bench.work, filesystem))
        for label, (busy, quiet) in results.items():
            print("authorize beside challenges while dd writes %d MiB (%.0f s) (%s): p99 %s, longest %s, %.0f/s, challenge p99 %s; "
                  "without the write: p99 %s, longest %s, %.0f/s, challenge p99 %s   (target: no stall over 50 ms)" % (
                      options.stall_mb, busy[4], label, busy[0], busy[1], busy[2], busy[3], quiet[0], quiet[1], quiet[2], quiet[3]))
        shutil.rmtree(bench.work, ignore_errors=True)
        return

    def reset_pg_small():
        subprocess.run(["bash", "-c", admin + 'attestd_psql_admin postgres "DROP DATABASE IF EXISTS attestd_small WITH (FORCE)" '
                        '"CREATE DATABASE attestd_small OWNER attestd"'], cwd=ROOT, check=True, timeout=120, stdout=subprocess.DEVNULL)

    def measure_scale(rounds):
        """Each store's small and large tables in alternating rounds (small, large, small, ...),
        the large ones loaded once: every ratio compares two measurements a minute apart. Then
        the purge of 100,000 tokens expiring among the large tables.
        Returns (ratios: {store: {operation: [large/small per round]}}, peak RSS on the large
        tables per store in KiB, purge figures per store)."""
        large_sqlite = os.path.join(bench.work, "large.sqlite")
        small_pg = pg_url.rsplit("/", 1)[0] + "/attestd_small"
        stores = (("sqlite", "SQLite", os.path.join(bench.work, "small.sqlite"), large_sqlite, populate_sqlite(large_sqlite)),
                  ("pg1", "PostgreSQL", small_pg, pg_url, populate_pg))
        wanted = {"both": ("sqlite", "pg1"), "sqlite": ("sqlite",), "postgresql": ("pg1",)}[options.stores]
        stores = [entry for entry in stores if entry[0] in wanted]
        ratios, peaks, purges = {}, {}, {}
        for key, store, small_db, large_db, populate in stores:
            if key == "pg1":
                reset_pg()
                reset_pg_small()
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

    if options.only_scale:
        ratios, peaks, large_purges = measure_scale(options.scale_rounds)
        print("date: %s  command: scripts/bench-load %d --only-scale --stores %s --scale-rounds %d  (%.0f s in all)" % (
            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), options.seconds, options.stores, options.scale_rounds,
            time.monotonic() - started))
        for label, results, rss in bench.rows:
            bench.report_row(label, results, rss)
        for label, what, milliseconds in bench.operability:
            print("%-34s %-42s %9.1f ms" % (label, what, milliseconds))
        print_scale(ratios, peaks, large_purges, large_label)
        shutil.rmtree(bench.work, ignore_errors=True)
        return

    nginx_dir = os.path.join(bench.work, "nginx")
    os.makedirs(os.path.join(nginx_dir, "logs"))
    with open(os.path.join(nginx_dir, "nginx.conf"), "w") as f:
        f.write("worker_processes 2;\npid %s/nginx.pid;\nerror_log %s/logs/error.log;\nevents { worker_connections 1024; }\n"
                "http { access_log off; server { listen 127.0.0.1:18480; location / { return 200 \"ok\"; } } }\n" % (nginx_dir, nginx_dir))
    nginx = subprocess.Popen(["nginx", "-p", nginx_dir, "-c", os.path.join(nginx_dir, "nginx.conf"), "-g", "daemon off;"])
    hello = subprocess.Popen([os.path.join(options.bin, "attest-bench"), "--hello", "18481"], stdout=subprocess.DEVNULL)
    time.sleep(0.5)
    try:
        reference = wrk(options.seconds, ["http://127.0.0.1:18480/"])

        def nginx_rate():
            return wrk(options.seconds, ["http://127.0.0.1:18480/"])[0]
        gateway = {"sqlite": bench.gateway("SQLite", os.path.join(bench.work, "gateway.sqlite"), nginx_rate, 18481, options.rounds)}
        reset_pg()
        gateway["pg1"] = bench.gateway("PostgreSQL", pg_url, nginx_rate, 18481, options.rounds, revocation_nodes=2)
        if options.only_gateway:
            print("date: %s  command: scripts/bench-load %d --only-gateway  (%.0f s in all)" % (
                time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), options.seconds, time.monotonic() - started))
            print_gateway(gateway, options.rounds)
            return
        commit_rates = {"sqlite": sqlite_commit_rate(bench.work), "pg1": pg_commit_rate()}
        purge_path = os.path.join(bench.work, "purge.sqlite")
        purges = {"sqlite": bench.purge_under_load(purge_path, expiring_sqlite(purge_path))}
        reset_pg()
        purges["pg1"] = bench.purge_under_load(pg_url, expiring_pg)
        sqlite = os.path.join(bench.work, "attestd.sqlite")
        small = {
            "sqlite": bench.measure("SQLite, 1 node", sqlite, 1),
        }
        reset_pg()
        small["pg1"] = bench.measure("PostgreSQL, 1 node", pg_url, 1)
        reset_pg()
        small["pg2"] = bench.measure("PostgreSQL, 2 nodes", pg_url, 2)
        scale_ratios, scale_peaks, large_purges = measure_scale(options.scale_rounds)

        # One server thread pinned to core 0 against the verifier alone on core 0 (SQLite).
        pinned = bench.pinned_attest(options.attest_rounds)

        # The two PostgreSQL targets once more, on paired rounds: SQLite then PostgreSQL, one right
        # after the other, `--pairs` times; the median ratio decides (one pass moves by 15 % or more
        # from run to run on this machine, and the passes above are minutes apart).
        pairs = paired_rounds()
    finally:
        nginx.terminate()
        nginx.wait(timeout=10)
        hello.terminate()
        hello.wait(timeout=10)
        for node in bench.nodes:
            node.stop()

    def ratio(a, b):
        return "%.2f" % (a / b if b else 0)

    print("== attestd load benchmark ==")
    print("date: %s  nproc: %d  seconds per measurement: %d  command: scripts/bench-load %d  (%.0f s in all)"
          % (time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), os.cpu_count(), options.seconds, options.seconds,
             time.monotonic() - started))
    print("%-34s %-11s %10s %9s %9s" % ("store", "operation", "per second", "p50", "p99"))
    print("%-34s %-11s %10.1f %9s %9s" % ("nginx static return 200 (ceiling)", "GET /", reference[0], reference[1], reference[2]))
    for label, results, rss in bench.rows:
        bench.report_row(label, results, rss)
    for label, what, milliseconds in bench.operability:
        print("%-34s %-42s %9.1f ms" % (label, what, milliseconds))
    print_pinned(pinned)
    print_gateway(gateway, options.rounds)
    for key, label in (("sqlite", "SQLite"), ("pg1", "PostgreSQL, 1 node")):
        print("purge of 100,000 tokens expiring at once (%s): %s" % (label, purge_line(purges[key])))
    print("authorize / nginx (SQLite), single pass:  %s" % ratio(small["sqlite"]["authorize"][0], reference[0]))
    print("authorize PostgreSQL / SQLite (1 node):  %s   (first pass)" % ratio(small["pg1"]["authorize"][0], small["sqlite"]["authorize"][0]))
    print("refresh PostgreSQL / SQLite (1 node):    %s   (first pass)" % ratio(small["pg1"]["refresh"][0], small["sqlite"]["refresh"][0]))
    print_pairs(pairs, commit_rates)
    print("refresh 2 nodes / 1 node (PostgreSQL):   %s" % ratio(small["pg2"]["refresh"][0], small["pg1"]["refresh"][0]))
    print("authorize 2 nodes / 1 node (PostgreSQL): %s" % ratio(small["pg2"]["authorize"][0], small["pg1"]["authorize"][0]))
    print_scale(scale_ratios, scale_peaks, large_purges, large_label)
    print_pinned_ratios(pinned)
    shutil.rmtree(bench.work, ignore_errors=True)


if __name__ == "__main__":
    main()
