"""Part 4, busy: a busy database (BAD_INPUTS J S2, S3): the sqlite3 CLI holds the write lock longer / shorter
than --busy-timeout-ms while requests arrive."""

import json
import re
import select
import subprocess
import threading
import time

from attestd_testlib import Tally

from .rawhttp import authorize_once, b64, health_once, post_json, problem
from .tools import sim_failures


class Holder:
    """The sqlite3 CLI holding `BEGIN IMMEDIATE` until release()."""

    def __init__(self, db):
        self.proc = subprocess.Popen(["sqlite3", db], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.send(".timeout 5000\nBEGIN IMMEDIATE;\nSELECT 'locked';\n")
        self.expect("locked")
        self.locked_at = time.monotonic()

    def send(self, text):
        self.proc.stdin.write(text)
        self.proc.stdin.flush()

    def expect(self, word):
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if select.select([self.proc.stdout], [], [], deadline - time.monotonic())[0]:
                if self.proc.stdout.readline().strip() == word:
                    return
        raise SystemExit("sqlite3 did not print %s" % word)

    def release(self):
        self.send("COMMIT;\nSELECT 'released';\n")
        self.expect("released")
        self.proc.stdin.close()
        self.proc.wait(timeout=10)


def timed_post(port, path, fields):
    started = time.monotonic()
    res = post_json(port, path, fields)
    res["ms"] = (time.monotonic() - started) * 1000
    return res


def cmd_busy(a):
    p, cid = a.port, a.client_id
    tally = Tally()
    verdict = tally.check

    before = timed_post(p, "/v1/challenge", {"client_id": cid})
    verdict(before["status"] == 200, "a write before any lock answers 200")
    spare = json.loads(before["body"])["challenge"]
    # Held longer than --busy-timeout-ms: writes 503 + Retry-After, never 500.
    holder = Holder(a.db)
    writes, attests, reads, authorizations = [], [], [], []
    threads = [
        threading.Thread(target=lambda: writes.extend(timed_post(p, "/v1/challenge", {"client_id": cid}) for _ in range(4))),
        threading.Thread(target=lambda: attests.append(timed_post(p, "/v1/attest", {
            "client_id": cid, "key_id": b64(b"\x01" * 32), "attestation": "AAAA", "challenge": spare}))),
        threading.Thread(target=lambda: reads.extend(health_once(p, 5) for _ in range(5))),
        threading.Thread(target=lambda: authorizations.extend(authorize_once(p) for _ in range(5))),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=30)
    wait = a.hold - (time.monotonic() - holder.locked_at)
    if wait > 0:
        time.sleep(wait)
    held = time.monotonic() - holder.locked_at
    holder.release()
    released_at = time.monotonic()
    answers = writes + attests
    statuses = sorted(r["status"] for r in answers)
    retry = [r["headers"].get("retry-after", [None])[0] for r in answers]
    reasons = sorted({"%s/%s" % problem(r) for r in answers})
    lat = [r["ms"] for r in answers]
    verdict(all(s == 503 for s in statuses) and all(retry) and reasons == ["storage_unavailable/busy"],
            "lock held %.1f s (> %d ms busy timeout): %d writes answered %s, %s, Retry-After %s; latency %.0f-%.0f ms" % (
                held, a.busy_ms, len(answers), sorted(set(statuses)), ", ".join(reasons), sorted(set(retry), key=str), min(lat), max(lat)))
    verdict(500 not in statuses, "no 500 while the lock was held")
    read_ms = [ms for _, ms in reads]
    verdict(all(s == 200 for s, _ in reads),
            "GET /healthz during the lock: %d of %d answered 200, latency max %.0f ms (a worker blocked on the lock delays "
            "the requests of its own connections)" % (sum(s == 200 for s, _ in reads), len(reads), max(read_ms)))
    auth_ms = [ms for _, ms in authorizations]
    verdict(all(s == 401 for s, _ in authorizations),
            "GET /v1/authorize (a database read) during the lock: %d of %d answered 401 for an unknown token, latency max %.0f ms" % (
                sum(s == 401 for s, _ in authorizations), len(authorizations), max(auth_ms)))
    # Recovery by itself: the first write after COMMIT.
    after = timed_post(p, "/v1/challenge", {"client_id": cid})
    verdict(after["status"] == 200, "first write after COMMIT answers %s in %.0f ms (%.0f ms after the release), no restart" % (
        after["status"], after["ms"], (time.monotonic() - released_at) * 1000))
    again = timed_post(p, "/v1/attest", {"client_id": cid, "key_id": b64(b"\x01" * 32), "attestation": "AAAA", "challenge": spare})
    print("INFO: the challenge presented during the 503 is, afterwards: %s %s/%s (%s)" % (
        again["status"], *problem(again), "not consumed: the 503 rolled back" if problem(again)[1] != "challenge_used" else "consumed"))
    # Held shorter than the timeout: requests wait and succeed.
    holder = Holder(a.db)
    short = []
    threads = [threading.Thread(target=lambda: short.append(timed_post(p, "/v1/challenge", {"client_id": cid}))) for _ in range(4)]
    for t in threads:
        t.start()
    time.sleep(max(0, a.short - (time.monotonic() - holder.locked_at)))
    held = time.monotonic() - holder.locked_at
    holder.release()
    for t in threads:
        t.join(timeout=30)
    lat = [r["ms"] for r in short]
    verdict(all(r["status"] == 200 for r in short) and len(short) == 4,
            "lock held %.0f ms (< %d ms): %d writes waited and answered %s, latency %.0f-%.0f ms" % (
                held * 1000, a.busy_ms, len(short), sorted({r["status"] for r in short}), min(lat), max(lat)))
    return 1 if tally.failed else 0


def part(run):
    print("== 4. busy database: the sqlite3 CLI holds BEGIN IMMEDIATE (BAD_INPUTS J S2, S3; --busy-timeout-ms 500)")
    db = run.path("busy.sqlite")
    server = run.start_attestd(db, "--busy-timeout-ms", "500", "--address-rate", "0")
    cid = run.new_integration(db, "busy")
    run.checker(cmd_busy, port=server.port, db=db, client_id=cid, busy_ms=500, hold=3.0, short=0.2)
    report = run.path("busy-sim.txt")
    with open(report, "wb") as out:
        subprocess.run(run.simulate_args(server.port, cid, "--devices", "5", "--refreshes", "2"), stdout=out,
                       stderr=subprocess.STDOUT, timeout=300)
    failures = sim_failures(report)
    t = run.tally
    t.check(failures == 0, "after the locks, 5 simulated devices attest and refresh with %d failures" % failures)
    text = server.log_text()
    unavailable = sum("storage unavailable" in line for line in text.splitlines())
    t.check(not re.search(r'"status":500|Program crashed', text),
            "no 500 in attestd's log; %d 'storage unavailable' log lines" % unavailable)
    server.stop()
