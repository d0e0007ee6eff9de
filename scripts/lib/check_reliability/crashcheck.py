"""crashcheck: after kill -9 and restart, what was acknowledged before the kill is still there (part 3,
crash.py, runs it once per cycle)."""

import base64
import json
import os
import socket
import sqlite3

from attestd_testlib import HOST, Reader, Tally, read_response

from .rawhttp import b64, problem


class Client:
    """A keep-alive client for the checks (reconnects when the server closes)."""

    def __init__(self, port):
        self.port = port
        self.sock = None

    def request(self, method, path, body=b"", headers=""):
        for attempt in range(2):
            try:
                if self.sock is None:
                    self.sock = socket.create_connection((HOST, self.port), timeout=10)
                    self.reader = Reader(self.sock)
                head = "%s %s HTTP/1.1\r\nHost: x\r\n%s" % (method, path, headers)
                if body:
                    head += "Content-Type: application/json\r\nContent-Length: %d\r\n" % len(body)
                self.sock.sendall(head.encode() + b"\r\n" + body)
                status, h, b, _ = read_response(self.reader)
                if "close" in ",".join(h.get("connection", [])).lower():
                    self.close()
                return status, b
            except (OSError, EOFError):
                self.close()
                if attempt:
                    raise

    def close(self):
        if self.sock is not None:
            self.sock.close()
            self.sock = None

    def authorize(self, token):
        return self.request("GET", "/v1/authorize", headers="Authorization: Bearer %s\r\n" % token)[0]


def load_log(path):
    reqs, resps = {}, {}
    if not os.path.exists(path):
        return reqs, resps
    with open(path, encoding="utf-8") as f:
        for line in f:
            try:
                ev = json.loads(line)
            except ValueError:
                continue  # a torn last line cannot happen with one write per record, but never trust it
            (reqs if ev["ev"] == "req" else resps)[ev["id"]] = ev
    return reqs, resps


def cmd_crashcheck(a):
    client = Client(a.port)
    db = sqlite3.connect("file:%s?mode=ro" % a.db, uri=True, timeout=10)
    status = dict(db.execute("SELECT client_id, status FROM integrations"))
    revoked = set(open(a.revoked).read().split()) if os.path.exists(a.revoked) else set()
    uncertain = set(open(a.uncertain).read().split()) if a.uncertain and os.path.exists(a.uncertain) else set()
    failures = []

    def fail(check, text):
        failures.append((check, text))

    tokens, keys = acknowledged(a.logs)
    check_revocations(client, db, status, revoked, uncertain, fail)
    authorized, refused = check_tokens(client, tokens, revoked, status, fail)
    present = check_devices(db, keys, fail)
    replayed, in_flight, in_flight_ok, issued_checked = check_challenges(client, a.current, revoked, status, fail)
    checks = [
        ("tokens", "%d acknowledged tokens: %d authorize, %d refused (revoked integrations)" % (len(tokens), authorized, refused)),
        ("devices", "%d acknowledged attestations, %d device rows present" % (len(keys), present)),
        ("challenges", "%d consumed challenges replayed and refused; %d in-flight presentations replayed twice (%d succeeded once); "
                       "%d issued-but-unused challenges still usable" % (replayed, in_flight, in_flight_ok, issued_checked)),
        ("revocations", "%d acknowledged revocations intact, %d killed revocations all-or-nothing" % (len(revoked), len(uncertain))),
    ]
    tally = Tally()
    for name, text in checks:
        bad = [t for c, t in failures if c == name]
        tally.check(not bad, "%s%s: %s" % (a.label, name, text))
        for t in bad[:5]:
            print("  " + t)
        if len(bad) > 5:
            print("  ... and %d more" % (len(bad) - 5))
    client.close()
    db.close()
    return 1 if failures else 0


def acknowledged(logs):
    """(access token, client ID) of every token acknowledged in the proxy logs, and the key IDs of every
    acknowledged attestation."""
    # Everything acknowledged before any kill so far: tokens and registered keys.
    tokens, keys = [], []
    for path in logs:
        reqs, resps = load_log(path)
        for rid, resp in resps.items():
            if resp["status"] == 200 and resp["path"] in ("/v1/attest", "/v1/token"):
                fields = json.loads(reqs[rid]["body"])
                tokens.append((json.loads(resp["body"])["access_token"], fields["client_id"]))
                if resp["path"] == "/v1/attest":
                    keys.append(fields["key_id"])
    return tokens, keys


def check_revocations(client, db, status, revoked, uncertain, fail):
    # No revocation undone; a revocation killed mid-way is all or nothing.
    for cid in sorted(revoked):
        if status.get(cid) != "revoked":
            fail("revocations", "%s was revoked (attestctl exit 0) but is %s" % (cid, status.get(cid)))
        code, body = client.request("POST", "/v1/challenge", json.dumps({"client_id": cid}).encode())
        if code != 403:
            fail("revocations", "%s: POST /v1/challenge answered %s, not 403" % (cid, code))
    for cid in sorted(uncertain):
        devices = dict(db.execute("SELECT status, count(*) FROM devices WHERE client_id = ? GROUP BY status", (cid,)))
        live_tokens = db.execute("SELECT count(*) FROM tokens WHERE client_id = ?", (cid,)).fetchone()[0]
        if status.get(cid) == "revoked" and (devices.get("active", 0) or live_tokens):
            fail("revocations", "%s half revoked: %s devices active, %d tokens left" % (cid, devices.get("active", 0), live_tokens))
        if status.get(cid) == "active" and devices.get("revoked", 0):
            fail("revocations", "%s active but %d devices blocked" % (cid, devices["revoked"]))


def check_tokens(client, tokens, revoked, status, fail):
    # Every acknowledged token authorizes, unless its integration is revoked (then it must not).
    authorized = refused = 0
    for token, cid in tokens:
        want = 401 if (cid in revoked or status.get(cid) == "revoked") else 200
        got = client.authorize(token)
        authorized += got == 200
        refused += got == 401
        if got != want:
            fail("tokens", "token of %s (%s): /v1/authorize answered %s, expected %s" % (cid, status.get(cid), got, want))
    return authorized, refused


def check_devices(db, keys, fail):
    # Every acknowledged attestation left its device.
    present = 0
    for key in keys:
        row = db.execute("SELECT count(*) FROM devices WHERE key_id = ?", (base64.b64decode(key),)).fetchone()[0]
        present += row
        if row != 1:
            fail("devices", "acknowledged key %s has no device row" % key)
    return present


def check_challenges(client, current, revoked, status, fail):
    # This cycle: consumed challenges stay consumed; in-flight ones work at most once; issued ones survive.
    reqs, resps = load_log(current)
    presented = set()
    replayed = in_flight = in_flight_ok = issued_checked = 0
    for rid, req in sorted(reqs.items()):
        if req["path"] not in ("/v1/attest", "/v1/token"):
            continue
        fields = json.loads(req["body"])
        presented.add(fields["challenge"])
        body = req["body"].encode("latin-1")
        if rid in resps:
            if resps[rid]["status"] != 200:
                continue
            replayed += 1
            code, answer = client.request("POST", req["path"], body)
            revoked_now = fields["client_id"] in revoked or status.get(fields["client_id"]) == "revoked"
            want = (403, "integration_revoked") if revoked_now else (401, "challenge_used")
            reason = problem({"body": answer})[1]
            if (code, reason) != want:
                fail("challenges", "replayed %s (challenge consumed before the kill): %s %s, expected %s %s" % (
                    req["path"], code, reason, want[0], want[1]))
        else:
            in_flight += 1
            wins = sum(client.request("POST", req["path"], body)[0] == 200 for _ in range(2))
            in_flight_ok += wins
            if wins > 1:
                fail("challenges", "an in-flight %s challenge worked twice after the restart" % req["path"])
    for rid, resp in sorted(resps.items()):
        if resp["path"] != "/v1/challenge" or resp["status"] != 200:
            continue
        cid = json.loads(reqs[rid]["body"])["client_id"]
        challenge = json.loads(resp["body"])["challenge"]
        if challenge in presented or cid in revoked or status.get(cid) == "revoked":
            continue
        issued_checked += 1
        probe = json.dumps({"client_id": cid, "key_id": b64(os.urandom(32)), "assertion": "AAAA", "challenge": challenge}).encode()
        code, answer = client.request("POST", "/v1/token", probe)
        reason = problem({"body": answer})[1]
        # The assertion is malformed: a usable challenge gets past the challenge checks to the
        # assertion's parse (400 cbor_trailing_bytes); a spent one would get challenge_used.
        if (code, reason) != (400, "cbor_trailing_bytes"):
            fail("challenges", "a challenge issued (200) before the kill, never presented: %s %s, expected 400 cbor_trailing_bytes"
                 % (code, reason))
    return replayed, in_flight, in_flight_ok, issued_checked
