"""Review M1, measured: a `user` admin key loops an integration's device list (100,000 devices with
4,000-byte receipts, SQLite) while devices ask for challenges; their p99 stays under 100 ms and
attestd's resident memory under the bound docs/OPERATIONS.md states.

Usage: check_admin_load.py --bin DIR [--devices N] [--seconds S]. Loopback only, bounded in time.
Prints PASS/FAIL lines and "N passed, N failed"; exits 1 on any failure.
"""

import argparse
import http.client
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attestd_testlib import HOST, Attestd, Tally, create_integration  # noqa: E402

# The bound docs/OPERATIONS.md states ("Memory"): attestd's resident set under admin listings.
RSS_BOUND_MIB = 256
P99_BOUND_MS = 100
DEVICE_COLUMNS = "key_id, client_id, public_key, counter, environment, receipt, status, created_at, updated_at"


def rss_mib(pid):
    with open("/proc/%d/status" % pid) as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return 0.0


def populate(db, client_id, devices):
    """`devices` rows of the integration, each with a 4,000-byte receipt, as Apple's are."""
    sql = ("WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %d) "
           "INSERT INTO devices (%s) SELECT randomblob(32), '%s', randomblob(65), 0, 'production', randomblob(4000), 'active', "
           "unixepoch(), unixepoch() FROM n; ANALYZE;" % (devices, DEVICE_COLUMNS, client_id))
    subprocess.run(["sqlite3", db, sql], check=True, timeout=600)


def get_json(connection, path, key):
    connection.request("GET", path, headers={"Authorization": "Bearer " + key})
    response = connection.getresponse()
    return response.status, json.loads(response.read() or b"{}")


def loop_devices(port, key, client_id, stop, counts):
    """Walks every page of the device list, again and again, until `stop`."""
    connection = http.client.HTTPConnection(HOST, port, timeout=30)
    while not stop.is_set():
        cursor = None
        while not stop.is_set():
            path = "/admin/v1/integrations/%s/devices?limit=500%s" % (client_id, "&cursor=" + cursor if cursor else "")
            status, body = get_json(connection, path, key)
            if status != 200:
                counts["errors"] += 1
                break
            counts["pages"] += 1
            cursor = body["next_cursor"]
            if cursor is None:
                break


def challenges(port, client_id, seconds):
    """One challenge every 20 ms for `seconds`, each one's latency in milliseconds (and the failures)."""
    connection = http.client.HTTPConnection(HOST, port, timeout=30)
    body = json.dumps({"client_id": client_id})
    latencies, failures = [], 0
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        started = time.monotonic()
        connection.request("POST", "/v1/challenge", body=body, headers={"Content-Type": "application/json"})
        response = connection.getresponse()
        response.read()
        latencies.append((time.monotonic() - started) * 1000)
        failures += response.status != 200
        time.sleep(max(0.0, 0.02 - (time.monotonic() - started)))
    return latencies, failures


def p99(values):
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(len(ordered) * 0.99))] if ordered else float("inf")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--devices", type=int, default=100_000)
    parser.add_argument("--seconds", type=float, default=20)
    args = parser.parse_args()
    t = Tally()
    work = tempfile.mkdtemp(prefix="check-admin-load.")
    attestd = None
    try:
        db = os.path.join(work, "attestd.sqlite")
        first = Attestd(os.path.join(args.bin, "attestd"), os.path.join(work, "first.log"), ["--db", db])
        first.stop()
        attestctl = os.path.join(args.bin, "attestctl")
        client_id = create_integration(attestctl, db, "ws_load", "Load", "ABCDE12345", "com.example.load")
        key = json.loads(subprocess.run(
            [attestctl, "admin-key", "create", "--db", db, "--workspace", "ws_load", "--role", "user", "--name", "Looper", "--json"],
            capture_output=True, text=True, check=True, timeout=60).stdout)["key"]
        started = time.monotonic()
        populate(db, client_id, args.devices)
        print("populated %d devices in %.1f s" % (args.devices, time.monotonic() - started), file=sys.stderr)
        attestd = Attestd(os.path.join(args.bin, "attestd"), os.path.join(work, "attestd.log"), ["--db", db, "--address-rate", "0"])
        t.check(attestd.started(), "attestd starts on %d devices" % args.devices, attestd.log_text()[-400:])
        if not attestd.started():
            return t.finish()
        quiet, _ = challenges(attestd.port, client_id, 3)
        stop = threading.Event()
        counts = {"pages": 0, "errors": 0}
        loops = [threading.Thread(target=loop_devices, args=(attestd.admin_port, key, client_id, stop, counts)) for _ in range(2)]
        peak = [rss_mib(attestd.pid)]
        sampler_stop = threading.Event()

        def sample():
            while not sampler_stop.wait(0.2):
                peak.append(rss_mib(attestd.pid))
        sampler = threading.Thread(target=sample)
        sampler.start()
        for loop in loops:
            loop.start()
        loaded, failures = challenges(attestd.port, client_id, args.seconds)
        stop.set()
        for loop in loops:
            loop.join(timeout=60)
        sampler_stop.set()
        sampler.join()
        print("challenge p99: %.1f ms quiet, %.1f ms while the list loops (%d challenges); %d pages listed; peak RSS %.0f MiB"
              % (p99(quiet), p99(loaded), len(loaded), counts["pages"], max(peak)), file=sys.stderr)
        t.check(counts["errors"] == 0 and counts["pages"] > 0, "a user key pages through the device list (%d pages of 500)" % counts["pages"])
        # One walk after the load, whatever the machine's speed: every device once, no page repeated.
        listed, seen, pages = 0, set(), 0
        connection = http.client.HTTPConnection(HOST, attestd.admin_port, timeout=30)
        cursor = None
        while pages < 1000:
            path = "/admin/v1/integrations/%s/devices?limit=500%s" % (client_id, "&cursor=" + cursor if cursor else "")
            status, body = get_json(connection, path, key)
            if status != 200:
                break
            pages += 1
            listed += len(body["devices"])
            seen.update(device["key_id"] for device in body["devices"])
            cursor = body["next_cursor"]
            if cursor is None:
                break
        t.check(listed == args.devices and len(seen) == args.devices,
                "a walk of the pages lists every device once (%d pages)" % pages, "%d listed, %d distinct" % (listed, len(seen)))
        t.check(failures == 0 and p99(loaded) < P99_BOUND_MS,
                "device challenges' p99 stays under %d ms while the list loops" % P99_BOUND_MS, "%.1f ms" % p99(loaded))
        t.check(max(peak) < RSS_BOUND_MIB, "attestd's resident memory stays under %d MiB" % RSS_BOUND_MIB, "%.0f MiB" % max(peak))
    finally:
        if attestd is not None:
            attestd.stop()
        shutil.rmtree(work, ignore_errors=True)
    return t.finish()


if __name__ == "__main__":
    sys.exit(main())
