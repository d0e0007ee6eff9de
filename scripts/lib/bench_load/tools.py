"""What the measurements share: the constants, subprocesses, wrk and attest-load, the stores' own
commit rates."""

import http.client
import os
import re
import subprocess
import threading
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
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


def cpu_seconds(pid):
    """User + system CPU time of process `pid` so far, in seconds (/proc/PID/stat)."""
    with open("/proc/%d/stat" % pid) as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def cpu_per_operation(pid, work):
    """Runs `work` (an attest-load run: its parsed lines) and returns them with attestd's CPU time
    per operation, in microseconds, as "cpu_us_per_operation": attestd's CPU is sampled every
    0.1 s, and its rate over the run's measured window (the last `seconds` of the run, less its
    first and last half second: attest-load prepares its requests before the clock starts) is
    divided by the operations per second."""
    samples, done = [], threading.Event()

    def sample():
        while not done.is_set():
            samples.append((time.monotonic(), cpu_seconds(pid)))
            done.wait(0.1)

    sampler = threading.Thread(target=sample)
    sampler.start()
    try:
        result = work()
    finally:
        done.set()
        sampler.join()
    elapsed = float(re.search(r"seconds ([0-9.]+)", result.get("mode", "")).group(1))
    end = samples[-1][0]
    window = [(at, cpu) for at, cpu in samples if end - elapsed + 0.5 <= at <= end - 0.5]
    rate = float(result["operations_per_second"])
    if len(window) < 2 or not rate:
        result["cpu_us_per_operation"] = 0
        return result
    cpu_rate = (window[-1][1] - window[0][1]) / (window[-1][0] - window[0][0])
    result["cpu_us_per_operation"] = cpu_rate / rate * 1e6
    return result


def load(binary, mode, ports, client_id, state, connections, seconds, cpu=None):
    command = [binary, mode, "--port", ",".join(map(str, ports)), "--client-id", client_id, "--app-id", APP_ID, "--state", state,
               "--connections", str(connections), "--seconds", str(seconds)]
    if cpu is not None:
        command = ["taskset", "-c", str(cpu)] + command
    out = run(command)
    return dict(line.split(" ", 1) for line in out.strip().splitlines() if " " in line)
