"""Part 3, crash: kill -9 during a mixed load, N cycles (BAD_INPUTS J S1, I R6). A recording HTTP/1.1
pass-through (Proxy) sits between the simulated devices and attestd; after each restart crashcheck.py
checks integrity, acknowledged tokens, challenges and revocations."""

import glob
import itertools
import json
import os
import socket
import subprocess
import threading
import time

from attestd_testlib import HOST, Reader, exit_status, parse_head

from .crashcheck import cmd_crashcheck
from .rawhttp import exchange, request_bytes
from .tools import ms_to_s, sqlite_cli

# ---------------------------------------------------------------------------------------------
# proxy: forwards HTTP/1.1 (Content-Length bodies) and records every POST and its complete answer


def read_message(reader):
    try:
        head = reader.until(b"\r\n\r\n")
    except EOFError:
        return None
    first, headers = parse_head(head)
    length = int(headers.get("content-length", ["0"])[0])
    return first, headers, head, reader.exact(length)


class Proxy:
    """Listens on 127.0.0.1 (port 0), forwards to attestd, and appends every POST and its complete answer to
    `log` (one write per record, before the answer is passed on). stop() closes every connection at once, as a
    killed process would."""

    def __init__(self, upstream, log, max_seconds=120):
        self.upstream = upstream
        self.logfd = os.open(log, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
        self.ids = itertools.count()
        self.lock = threading.Lock()
        self.stopped = threading.Event()
        self.conns = set()
        self.server = socket.socket()
        self.server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.server.bind((HOST, 0))
        self.server.listen(256)
        self.server.settimeout(0.2)
        self.port = self.server.getsockname()[1]
        self.deadline = time.monotonic() + max_seconds
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def log(self, obj):
        line = (json.dumps(obj) + "\n").encode()
        with self.lock:
            if self.stopped.is_set():
                raise OSError("proxy stopped")
            os.write(self.logfd, line)  # one write per record, before the answer is passed on

    def track(self, sock):
        with self.lock:
            if self.stopped.is_set():
                sock.close()
                raise OSError("proxy stopped")
            self.conns.add(sock)
        return sock

    def handle(self, client):
        upstream = None
        try:
            client.settimeout(60)
            creader = Reader(client)
            while True:
                msg = read_message(creader)
                if msg is None:
                    break
                first, _, head, body = msg
                method, path = first.split(" ")[:2]
                if upstream is None:
                    upstream = self.track(socket.create_connection((HOST, self.upstream), timeout=60))
                    ureader = Reader(upstream)
                rid = next(self.ids)
                if method == "POST":
                    self.log({"ev": "req", "id": rid, "path": path, "body": body.decode("latin-1")})
                upstream.sendall(head + body)
                reply = read_message(ureader)
                if reply is None:
                    break
                rfirst, rheaders, rhead, rbody = reply
                if method == "POST":
                    self.log({"ev": "resp", "id": rid, "path": path, "status": int(rfirst.split(" ")[1]), "body": rbody.decode("latin-1")})
                client.sendall(rhead + rbody)
                if "close" in ",".join(rheaders.get("connection", [])).lower():
                    break
        except (OSError, EOFError, ValueError):
            pass
        finally:
            for sock in (client, upstream):
                if sock is not None:
                    with self.lock:
                        self.conns.discard(sock)
                    sock.close()

    def serve(self):
        while time.monotonic() < self.deadline and not self.stopped.is_set():
            try:
                client, _ = self.server.accept()
            except socket.timeout:
                continue
            except OSError:
                break
            try:
                self.track(client)
            except OSError:
                break
            threading.Thread(target=self.handle, args=(client,), daemon=True).start()

    def stop(self):
        with self.lock:
            self.stopped.set()
            for sock in self.conns:
                try:
                    sock.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass
            os.close(self.logfd)
        self.thread.join(timeout=5)
        self.server.close()


# ---------------------------------------------------------------------------------------------
# the cycles


def crash_cycle(run, cycle, db, d):
    t, rng = run.tally, run.rng
    log = os.path.join(d, "proxy-%d.jsonl" % cycle)
    keep_id = run.new_integration(db, "crash %d" % cycle)
    r1 = run.new_integration(db, "crash %d revoked" % cycle)
    r2 = run.new_integration(db, "crash %d revoke killed" % cycle)
    proxy = Proxy(run.server.port, log, max_seconds=120)
    sims = []
    for cid, concurrency in ((keep_id, 6), (r1, 2), (r2, 2)):
        with open(os.path.join(d, "sim-%d-%s.txt" % (cycle, cid)), "wb") as out:
            sims.append(subprocess.Popen(["timeout", "60", *run.simulate_args(
                proxy.port, cid, "--devices", "1000", "--refreshes", "3", "--concurrency", str(concurrency))],
                stdout=out, stderr=subprocess.STDOUT))
    t0 = time.monotonic()

    def at(ms):
        time.sleep(max(0, t0 + ms_to_s(ms) - time.monotonic()))

    def issue():  # challenges issued and never presented (their issuance must survive the kill too)
        body = json.dumps({"client_id": keep_id}).encode()
        for _ in range(20):
            try:
                exchange(proxy.port, request_bytes("POST", "/v1/challenge", body)[0] + body, timeout=2)
            except Exception:
                pass
            time.sleep(0.05)

    # Random moments: the kill in [1.0, 3.5) s; a revocation, and one killed by kill -9 0-59 ms after it starts
    # (attestctl revoke takes about 10 ms), both before the kill.
    kill_ms = 1000 + rng.randrange(2500)
    revoke_ms = 200 + rng.randrange(kill_ms - 200)
    rkill_ms = 200 + rng.randrange(kill_ms - 200)
    rkill_delay = rng.randrange(60)
    rc = {}

    def revoke():
        at(revoke_ms)
        try:
            rc["revoke"] = subprocess.run([run.attestctl, "integration", "revoke", r1, "--yes", "--db", db],
                                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=30).returncode
        except subprocess.TimeoutExpired:
            rc["revoke"] = 124

    def revoke_killed():
        at(rkill_ms)
        proc = subprocess.Popen([run.attestctl, "integration", "revoke", r2, "--yes", "--db", db],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(ms_to_s(rkill_delay))
        try:
            proc.kill()
        except OSError:
            pass
        rc["rkill"] = exit_status(proc.wait())

    helpers = [threading.Thread(target=fn, daemon=True) for fn in (issue, revoke, revoke_killed)]
    for thread in helpers:
        thread.start()
    at(kill_ms)
    was_alive = run.server.running()
    run.server.kill9()
    for sim in sims:
        sim.terminate()
    for sim in sims:
        try:
            sim.wait(timeout=30)
        except subprocess.TimeoutExpired:
            sim.kill()
            sim.wait()
    proxy.stop()
    for thread in helpers:
        thread.join(timeout=40)
    t.check(was_alive, "cycle %d: attestd was alive until the kill -9 at %d ms" % (cycle, kill_ms))
    after_the_kill(run, cycle, db, d, log, (r1, r2), (kill_ms, revoke_ms, rkill_ms, rkill_delay), rc)


def after_the_kill(run, cycle, db, d, log, revoked_ids, moments, rc):
    """What a cycle's proxy log recorded; attestd restarted on the database; the checks after the restart
    (scripts/lib/check_reliability/crashcheck.py) and the revocation re-run (R6)."""
    t = run.tally
    r1, r2 = revoked_ids
    kill_ms, revoke_ms, rkill_ms, rkill_delay = moments
    revoke_rc, rkill_rc = str(rc.get("revoke", "none")), str(rc.get("rkill", "none"))
    revoked_file, uncertain = os.path.join(d, "revoked"), os.path.join(d, "uncertain-%d" % cycle)
    if revoke_rc == "0":
        with open(revoked_file, "a") as f:
            f.write(r1 + "\n")
    with open(uncertain, "w") as f:
        if rkill_rc != "0":
            f.write(r2 + "\n")
    if rkill_rc == "0":
        with open(revoked_file, "a") as f:
            f.write(r2 + "\n")
    with open(log, errors="replace") as f:
        records = f.read().splitlines()
    answers = sum('"ev": "resp"' in line for line in records)
    tokens = sum('"ev": "resp"' in line and '"status": 200, "body": "{\\"access_token' in line for line in records)
    inflight = sum('"ev": "req"' in line for line in records) - answers
    print("   cycle %d: kill -9 at %d ms after %d POST answers (%d tokens), %d in flight; revoke at %d ms exit %s; "
          "revoke killed %d ms after its start at %d ms: exit %s" % (
              cycle, kill_ms, answers, tokens, inflight, revoke_ms, revoke_rc, rkill_delay, rkill_ms, rkill_rc))
    server = run.start_attestd(db, "--address-rate", "0", "--attest-rate", "0")
    killed_one = rkill_rc != "0"
    if killed_one:
        print("   cycle %d: after the restart the killed revocation left %s %s" % (cycle, r2, sqlite_cli(db, (
            "SELECT status||' ('||(SELECT count(*) FROM devices WHERE client_id = '{0}' AND status = 'revoked')||' of '||"
            "(SELECT count(*) FROM devices WHERE client_id = '{0}')||' devices blocked, '||"
            "(SELECT count(*) FROM tokens WHERE client_id = '{0}')||' tokens)' FROM integrations WHERE client_id = '{0}'"
        ).format(r2))))
    t.check(sqlite_cli(db, "PRAGMA integrity_check") == "ok", "cycle %d: PRAGMA integrity_check after the restart = ok" % cycle)
    run.checker(cmd_crashcheck, port=server.port, db=db, logs=sorted(glob.glob(os.path.join(d, "proxy-*.jsonl"))),
                current=log, revoked=revoked_file, uncertain=uncertain, label="cycle %d: " % cycle)
    # R6: re-running a revocation (acknowledged or killed) is idempotent and leaves it revoked.
    rerun = r2 if killed_one else r1
    again = subprocess.run([run.attestctl, "integration", "revoke", rerun, "--yes", "--db", db],
                           stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, timeout=60).returncode
    t.check(again == 0 and sqlite_cli(db, "SELECT status FROM integrations WHERE client_id = '%s'" % rerun) == "revoked",
            "cycle %d: re-running the revocation of %s one exits 0 and it stays revoked" % (
                cycle, "the killed" if killed_one else "the acknowledged"))
    with open(revoked_file) as f:
        listed = rerun in f.read().splitlines()
    if not listed:
        with open(revoked_file, "a") as f:
            f.write(rerun + "\n")


def part(run):
    o = run.o
    print("== 3. kill -9 during a mixed load, %d cycles (BAD_INPUTS J S1, I R6; seed %d)" % (o.cycles, o.seed))
    db, d = run.path("crash.sqlite"), run.path("crash")
    os.makedirs(d, exist_ok=True)
    open(os.path.join(d, "revoked"), "w").close()
    run.start_attestd(db, "--address-rate", "0", "--attest-rate", "0")
    for cycle in range(1, o.cycles + 1):
        crash_cycle(run, cycle, db, d)
    ok = run.healthy() and sqlite_cli(db, "PRAGMA integrity_check") == "ok"
    run.tally.check(ok, "after %d cycles: integrity ok and attestd still serves (%s)" % (o.cycles, run.rows(db)))
    run.server.stop()
