"""wire, sections B (envelope: JSON and base64, E1-E6) and C (CBOR, C1-C8); the cases of Wire (wire.py),
which mixes this class in."""

import base64
import json
import os
import subprocess

from .rawhttp import b64, b64url, exchange, post, problem, request_bytes


class PayloadCases:
    """Section B: the JSON envelope and its base64 fields (and E5 through attestctl); section C: CBOR."""

    def section_b(self):
        p = self.port
        mal = lambda reason: {"status": 400, "code": "malformed_request", "reason": reason}
        self.record("B", "B01", "E1", "invalid JSON on /v1/challenge", post(p, "/v1/challenge", b'{"client_id": '), mal("json"))
        deep = b"[" * 100000 + b"]" * 100000
        head, _ = request_bytes("POST", "/v1/attest", deep)
        self.record("B", "B02", "E1", "JSON nested 100,000 deep (200,000 bytes: over the 64 KiB body limit)",
                    exchange(p, head, after=deep, check_close=True), {"status": 413, "close": True})
        self.record("B", "B03", "E1", "JSON nested 30,000 deep (60,000 bytes, under the limit)",
                    post(p, "/v1/attest", b"[" * 30000 + b"]" * 30000), mal("json"))
        f = self.attest_fields(challenge="x")
        dup = ('{"client_id":%s,"key_id":%s,"key_id":%s,"attestation":%s,"challenge":"x"}' % (
            json.dumps(self.cid), json.dumps(f["key_id"]), json.dumps(b64(b"\x00" * 32)), json.dumps(f["attestation"]))).encode()
        self.record("B", "B04", "E1", "duplicate key_id in /v1/attest", post(p, "/v1/attest", dup), mal("json_duplicate_key"))
        dup = ('{"client_id":%s,"client_id":"clid_other"}' % json.dumps(self.cid)).encode()
        self.record("B", "B05", "E1", "duplicate client_id in /v1/challenge", post(p, "/v1/challenge", dup), mal("json_duplicate_key"))
        self.record("B", "B06", "E1", "non-string value", post(p, "/v1/challenge", b'{"client_id": 1}'), mal("json"))
        self.record("B", "B07", "E1", "bytes after the JSON object",
                    post(p, "/v1/challenge", json.dumps({"client_id": self.cid}).encode() + b"{}"), mal("json"))
        attest = lambda **o: post(p, "/v1/attest", json.dumps(self.attest_fields(**o)).encode())
        std_att = b64(self.recorded)
        self.record("B", "B08", "E2", "key_id in base64url (standard is specified)",
                    attest(key_id=b64url(self.key)), mal("key_id"))
        self.record("B", "B09", "E2", "attestation in base64url (standard is specified)",
                    attest(attestation=b64url(self.recorded)), mal("attestation"))
        issued = self.challenge()
        std = base64.b64encode(base64.urlsafe_b64decode(issued + "=")).decode()
        self.record("B", "B10", "E2", "challenge in standard base64 with padding (base64url is specified)",
                    attest(challenge=std), mal("challenge"))
        self.record("B", "B11", "E2", "key_id with a space inside", attest(key_id=self.key_b64[:20] + " " + self.key_b64[20:]), mal("key_id"))
        self.record("B", "B12", "E2", "key_id with a newline inside", attest(key_id=self.key_b64[:20] + "\n" + self.key_b64[20:]), mal("key_id"))
        mime = "\r\n".join(std_att[i : i + 76] for i in range(0, len(std_att), 76))
        self.record("B", "B13", "E2", "attestation wrapped at 76 characters (CRLF inside)", attest(attestation=mime), mal("attestation"))
        self.record("B", "B14", "E2", "key_id without its padding", attest(key_id=self.key_b64.rstrip("=")), mal("key_id"))
        self.record("B", "B15", "E2", "attestation that is not base64 (!!!!)", attest(attestation="!!!!"), mal("attestation"))
        self.record("B", "B16", "E2", "challenge with a trailing space", attest(challenge=self.challenge() + " "), mal("challenge"))
        self.record("B", "B17", "E3", "key_id of 31 bytes", attest(key_id=b64(self.key[:31])), mal("key_id_length"))
        self.record("B", "B18", "E3", "key_id of 33 bytes", attest(key_id=b64(self.key + b"\x00")), mal("key_id_length"))
        self.record("B", "B19", "E3", "key_id empty", attest(key_id=""), mal({"key_id_length", "key_id"}))
        for case_id, field in [("B20", "client_id"), ("B21", "key_id"), ("B22", "attestation"), ("B23", "challenge")]:
            fields = self.attest_fields(challenge="x")
            del fields[field]
            self.record("B", case_id, "E4", "/v1/attest without %s" % field, post(p, "/v1/attest", json.dumps(fields).encode()),
                        mal("missing_" + field))
        fields = self.attest_fields(challenge="x")
        fields["attestation"] = None
        self.record("B", "B24", "E4", "/v1/attest with attestation: null", post(p, "/v1/attest", json.dumps(fields).encode()),
                    mal({"json", "missing_attestation"}))
        token = {"client_id": self.cid, "key_id": self.key_b64, "challenge": "x"}
        self.record("B", "B25", "E4", "/v1/token without assertion", post(p, "/v1/token", json.dumps(token).encode()), mal("missing_assertion"))
        self.record("B", "B26", "E4", "/v1/challenge with {}", post(p, "/v1/challenge", b"{}"), mal("missing_client_id"))
        # A well-formed (never issued) challenge, so that the size limit is what refuses the request.
        unissued = base64.urlsafe_b64encode(os.urandom(32)).rstrip(b"=").decode()
        self.record("B", "B27", "E6", "attestation of 60,000 base64 characters (45,000 bytes; body under 64 KiB)",
                    attest(attestation="A" * 60000, challenge=unissued), mal("attestation_too_large"))
        token["challenge"] = unissued
        token["assertion"] = "A" * 4000
        self.record("B", "B28", "E6", "assertion of 4,000 base64 characters (3,000 bytes > 2 KiB)",
                    post(p, "/v1/token", json.dumps(token).encode()), mal("assertion_too_large"))
        self.registration_cases()

    def registration_cases(self):
        """E5 is about the registration API, which is attestctl (there is no HTTP registration)."""
        cases = [
            ("B29", "abcde12345", "com.example.app", "lowercase team ID"),
            ("B30", "ABCDE12345 ", "com.example.app", "team ID with a trailing space"),
            ("B31", "ABCDE1234", "com.example.app", "team ID of 9 characters"),
            ("B32", "ABCDE12345", "com.ex\u0430mple.app", "bundle ID with a Cyrillic homoglyph"),
            ("B33", "ABCDE12345", "com.example.app ", "bundle ID with a trailing space"),
            ("B34", "ABCDE12345", "com.example.app\u200b", "bundle ID with a zero-width space"),
        ]
        for case_id, team, bundle, what in cases:
            run = subprocess.run(
                [self.a.attestctl, "integration", "create", "--db", self.a.db, "--workspace", "ws_bad", "--name", "bad",
                 "--team-id", team, "--bundle-id", bundle], capture_output=True, timeout=30)
            res = {"status": None, "headers": {}, "body": run.stdout + run.stderr, "closed": None,
                   "note": "attestctl exit %d: %s" % (run.returncode, run.stderr.decode(errors="replace").strip().splitlines()[0][:100] if run.stderr.strip() else ""), "ms": None}
            self.record("B", case_id, "E5", "attestctl integration create with a %s (no NUL: argv cannot carry one)" % what, res,
                        {"status": None}, ok_extra=lambda r: "accepted (exit 0)" if run.returncode == 0 else None)

    # -- section C: CBOR -----------------------------------------------------------------------

    def attest_object(self, data):
        return post(self.port, "/v1/attest", json.dumps(self.attest_fields(attestation=b64(data))).encode())

    def attest_big(self, data):
        body = json.dumps(self.attest_fields(attestation=b64(data))).encode()
        head, _ = request_bytes("POST", "/v1/attest", body)
        return exchange(self.port, head, after=body, check_close=True)

    def section_c(self):
        mal = lambda reason: {"status": 400, "code": "malformed_request", "reason": reason}
        for i, item in enumerate(self.cbor["not_well_formed"], 1):
            data = bytes.fromhex(item["hex"])
            self.record("C", "C1-%03d" % i, "C1", "not well-formed %s: %s" % (item["hex"][:24], item["what"]),
                        self.attest_object(data), mal("cbor_*"))
        for i, case in enumerate(self.cbor["hostile_generated"]["cases"], 1):
            if case["hex"]:
                data = bytes.fromhex(case["hex"])
            else:
                unit = bytes.fromhex(case["pattern"].rstrip(".")[:2])
                if case["pattern"].startswith("9f"):
                    data = b"\x9f" + b"\x80" * (case["length_bytes"] - 2) + b"\xff"
                else:
                    data = unit * (case["length_bytes"] - 1) + b"\x00"
            what = "hostile %s (%d bytes)" % (case["what"], len(data))
            if len(data) > 16 * 1024:
                # base64 of 100,001 bytes is 133,336 characters: over the 64 KiB body limit before any field check.
                self.record("C", "C-hostile-%d" % i, "C3", what + "; body over 64 KiB", self.attest_big(data), {"status": 413, "close": True})
            elif case["hex"] and case["hex"].startswith("a4636"):
                self.record("C", "C-hostile-%d" % i, "C8", what, self.attest_object(data),
                            {"status": 401, "code": "attestation_rejected", "reason": "attestation_structure"})
            elif case["hex"] and case["hex"].startswith("a2"):
                self.record("C", "C-hostile-%d" % i, "C6", what, self.attest_object(data), mal("cbor_duplicate_key"))
            elif case["pattern"] and case["pattern"].startswith("9f"):
                self.record("C", "C-hostile-%d" % i, "C4", what, self.attest_object(data), mal("cbor_indefinite_length"))
            else:
                self.record("C", "C-hostile-%d" % i, "C2", what, self.attest_object(data), mal("cbor_*"))
        self.record("C", "C3-a", "C3", "12,000 x 0x81 then 00 (deep nesting under the 16 KiB object limit)",
                    self.attest_object(b"\x81" * 12000 + b"\x00"), mal("cbor_too_deep"))
        self.record("C", "C3-b", "C3", "10,000 x 0xCA then 00 (nested tags)", self.attest_object(b"\xca" * 10000 + b"\x00"), mal("cbor_too_deep"))
        self.record("C", "C4-a", "C4", "9f + 10,000 x 80 + ff (indefinite-length amplification)",
                    self.attest_object(b"\x9f" + b"\x80" * 10000 + b"\xff"), mal("cbor_indefinite_length"))
        self.record("C", "C5", "C5", "a recorded valid attestation followed by one 00 byte",
                    self.attest_object(self.recorded + b"\x00"), mal("cbor_trailing_bytes"))
        assert self.recorded[0] == 0xA3
        dup = b"\xa4" + self.recorded[1:] + b"\x63fmt\x64none"
        self.record("C", "C6", "C6", "the recorded attestation with a second fmt key (value none)", self.attest_object(dup), mal("cbor_duplicate_key"))
        # C7: keys in another order (VERIFICATION.md: any map key order is accepted) -> parsed, then refused by the
        # chain check (the recorded device is not under the simulator's root): 401, not a cbor_* 400.
        fmt_end = 1 + 4 + 16  # a3, "fmt" (63 666d74), "apple-appattest" (6f + 15 bytes)
        reordered = b"\xa3" + self.recorded[fmt_end:] + self.recorded[1:fmt_end]
        self.record("C", "C7", "C7", "the recorded attestation with fmt moved last (non-canonical order)", self.attest_object(reordered),
                    {"status": 401, "code": "attestation_rejected"},
                    ok_extra=lambda r: "refused as CBOR" if (problem(r)[1] or "").startswith("cbor_") else None)
        fmt_bstr = b"\xa3\x43fmt" + self.recorded[5:]
        self.record("C", "C8", "C8", "fmt key as a byte string", self.attest_object(fmt_bstr),
                    {"status": 401, "code": "attestation_rejected", "reason": "attestation_structure"})
