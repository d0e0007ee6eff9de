"""Part 1, wire: malformed input over the wire (BAD_INPUTS sections A, B, C): the documented answer,
nothing stored. The cases are in wire_transport.py (A) and wire_payload.py (B, C)."""

import base64
import json
import os
import random
import re
import subprocess
import time

from attestd_testlib import Tally

from .rawhttp import b64, post_json, problem
from .wire_payload import PayloadCases
from .wire_transport import TransportCases

# Text that must never appear in an answer: stack traces, SQL, source paths.
FORBIDDEN = [b"sqlite", b"SQLITE", b"Fatal error", b".swift", b"Traceback", b"SELECT ", b"INSERT ", b"UPDATE ", b"DELETE "]


class Wire(TransportCases, PayloadCases):
    """The cases (wire_transport.py, wire_payload.py), their verdicts and the per-section summary."""

    def __init__(self, a):
        self.a = a
        self.port = a.port
        self.cid = a.client_id
        self.results = []
        fixtures = a.fixtures
        with open(os.path.join(fixtures, "appattest/recorded/veehaitch_ios-14.4_attestation.json")) as f:
            self.recorded = base64.b64decode(json.load(f)["object_b64"])
        with open(os.path.join(fixtures, "cbor/cbor_not_well_formed.json")) as f:
            self.cbor = json.load(f)
        # A key ID whose standard base64 has '+' or '/', so that its base64url form differs.
        rng = random.Random(7)
        while True:
            key = bytes(rng.getrandbits(8) for _ in range(32))
            if "+" in b64(key) or "/" in b64(key):
                break
        self.key = key
        self.key_b64 = b64(key)

    def challenge(self):
        res = post_json(self.port, "/v1/challenge", {"client_id": self.cid})
        if res["status"] != 200:
            raise SystemExit("cannot get a challenge: %s %r" % (res["status"], res["body"][:200]))
        return json.loads(res["body"])["challenge"]

    def attest_fields(self, **override):
        fields = {"client_id": self.cid, "key_id": self.key_b64, "attestation": b64(self.recorded)}
        fields.update(override)
        if "challenge" not in fields:
            fields["challenge"] = self.challenge()
        return {k: v for k, v in fields.items() if v is not None}

    def record(self, section, case_id, bad, what, res, expect, ok_extra=None):
        """expect: status (int, set, or None for 'closed without answer'), code, reason (str, set, or
        'cbor_*'), close (bool)."""
        code, reason = problem(res)
        problems = []
        want = expect.get("status")
        statuses = want if isinstance(want, (set, frozenset)) else {want}
        if res["status"] not in statuses:
            problems.append("status")
        if "code" in expect and res["status"] is not None and res["status"] >= 400 and code != expect["code"]:
            problems.append("code")
        if "reason" in expect and res["status"] is not None and res["status"] >= 400:
            r = expect["reason"]
            if r == "cbor_*":
                if not (reason or "").startswith("cbor_"):
                    problems.append("reason")
            elif isinstance(r, (set, frozenset)):
                if reason not in r:
                    problems.append("reason")
            elif reason != r:
                problems.append("reason")
        if expect.get("close") and not res["closed"]:
            problems.append("not closed")
        # /healthz names the storage kind ("storage":"sqlite") on purpose: that is not leaked SQL.
        body = res["body"].replace(b'"storage":"sqlite"', b"")
        if bad != "E5" and any(word in body for word in FORBIDDEN):
            problems.append("stack trace or SQL text in the body")
        if ok_extra is not None:
            extra = ok_extra(res)
            if extra:
                problems.append(extra)
        got = "%s %s/%s%s%s" % (
            res["status"] if res["status"] is not None else "no answer",
            code or "-",
            reason or "-",
            ", closed" if res["closed"] else "",
            (", " + res["note"]) if res["note"] else "",
        )
        exp = "%s %s/%s%s" % (
            "|".join(str(s) if s is not None else "no answer" for s in sorted(statuses, key=lambda s: (s is None, s or 0))),
            expect.get("code", "-"),
            (expect.get("reason") if isinstance(expect.get("reason"), str) else "|".join(sorted(expect.get("reason", {"-"})))),
            ", closed" if expect.get("close") else "",
        )
        self.results.append(
            {"section": section, "id": case_id, "bad_inputs": bad, "what": what, "expected": exp, "got": got,
             "ok": not problems, "problems": problems, "reason": reason, "status": res["status"],
             "src": expect.get("src", "API.md"), "ms": res.get("ms")}
        )

    def run(self):
        started = time.monotonic()
        for section in self.a.sections:
            getattr(self, "section_" + section.lower())()
        elapsed = time.monotonic() - started
        tally = Tally()
        by_section = {}
        hard = lambda r: not r["ok"] and r["src"] != "BAD_INPUTS"
        for r in self.results:
            s = by_section.setdefault(r["section"], [0, 0, 0])
            s[1 if hard(r) else (2 if not r["ok"] else 0)] += 1
        names = {"A": "transport/HTTP", "B": "envelope JSON/base64 (+E5 via attestctl)", "C": "CBOR"}
        for section, (ok, bad, note) in sorted(by_section.items()):
            ids = sorted({b for r in self.results if r["section"] == section for b in r["bad_inputs"].split(",")})
            line = "section %s (%s, BAD_INPUTS %s): %d of %d cases answered as documented in docs/API.md%s" % (
                section, names[section], " ".join(ids), ok + note, ok + bad + note,
                "; %d of them differ from a BAD_INPUTS proposal the docs do not make" % note if note else "")
            tally.check(bad == 0, line)
        for r in self.results:
            if not r["ok"]:
                print("  %s: %s [%s] %s: expected %s, got %s (%s)" % (
                    "differs from docs" if hard(r) else "note (BAD_INPUTS only)", r["id"], r["bad_inputs"], r["what"], r["expected"],
                    r["got"], ", ".join(r["problems"])))
        c1 = [r["reason"] for r in self.results if r["bad_inputs"] == "C1"]
        if c1:
            counts = {}
            for reason in c1:
                counts[reason] = counts.get(reason, 0) + 1
            print("  C1 reasons: " + ", ".join("%s %d" % kv for kv in sorted(counts.items(), key=lambda kv: -kv[1])))
        print("  %d requests in %.1f s" % (len(self.results), elapsed))
        if self.a.out:
            with open(self.a.out, "w") as f:
                f.write("id\tbad_inputs\tverdict\tms\trequest\texpected\tgot\n")
                for r in self.results:
                    verdict = "ok" if r["ok"] else ("DIFFERS" if hard(r) else "note")
                    ms = "%.0f" % r["ms"] if r["ms"] is not None else "-"
                    f.write("\t".join([r["id"], r["bad_inputs"], verdict, ms, r["what"].replace("\t", " "), r["expected"],
                                       r["got"].replace("\n", " ")]) + "\n")
        return 1 if tally.failed else 0


def cmd_wire(a):
    return Wire(a).run()


def part(run):
    print("== 1. malformed input over the wire (BAD_INPUTS A, B, C)")
    db = run.path("wire.sqlite")
    server = run.start_attestd(db, "--address-rate", "0", "--attest-rate", "0")
    cid = run.new_integration(db, "wire")
    subprocess.run(run.simulate_args(server.port, cid, "--devices", "5", "--refreshes", "2"), stdout=subprocess.DEVNULL,
                   timeout=300)  # rows that must stay as they are
    before = run.rows(db)
    run.checker(cmd_wire, port=server.port, client_id=cid, db=db, attestctl=run.attestctl, fixtures=run.fixtures,
                sections="ABC", out=run.path("wire.tsv"))
    after = run.rows(db)
    t = run.tally
    t.check(before == after, "nothing stored by the malformed cases: %s before, %s after" % (before, after))
    t.check(run.healthy(), "the process survived and GET /healthz answers 200")
    t.check(not re.search(r'"status":5[0-9][0-9]|Program crashed', server.log_text()), "no 5xx answered, no crash logged")
    server.stop()
