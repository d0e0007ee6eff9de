"""wire, section A: transport (BAD_INPUTS H1-H14); the cases of Wire (wire.py), which mixes this class in."""

import json
import socket
import threading
import time

from attestd_testlib import HOST, Reader, read_response

from .rawhttp import exchange, post, problem, request_bytes


class TransportCases:
    """Section A: framing, sizes, headers, versions, media types, a reset mid-body, pipelining."""

    def section_a(self):
        p = self.port
        # H5 runs beside the others: a request MHD does not frame is only ended by the 10 s idle timeout.
        raw = (b"POST /v1/challenge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: gzip, chunked\r\n\r\n"
               b"2\r\n{}\r\n0\r\n\r\n")
        te = {}
        te_thread = threading.Thread(target=lambda: te.update(exchange(p, raw, timeout=15, check_close=True)))
        te_thread.start()
        big = lambda n: exchange(p, request_bytes("POST", "/v1/attest", length=n)[0], after=b"x" * min(n, 1 << 20), check_close=True)
        self.record("A", "A01", "H1", "POST /v1/attest, Content-Length: 10485760 (headers first, body after the answer)",
                    big(10485760), {"status": 413, "close": True})
        self.record("A", "A02", "H1", "POST /v1/challenge, Content-Length: 65537", exchange(
            p, request_bytes("POST", "/v1/challenge", length=65537)[0], after=b"x" * 65537, check_close=True),
            {"status": 413, "close": True})
        fields = self.attest_fields(attestation="A" * (1 << 20), challenge="x")
        body = json.dumps(fields).encode()
        head, _ = request_bytes("POST", "/v1/attest", body)
        self.record("A", "A03", "H1,E6", "POST /v1/attest whose attestation field is 1 MiB of base64 (body %d bytes)" % len(body),
                    exchange(p, head, after=body, check_close=True), {"status": 413, "close": True})
        for case_id, value, what in [
            ("A04", "99999999999999999999", "Content-Length: 99999999999999999999 (overflows 64 bits)"),
            ("A05", "-1", "Content-Length: -1"),
            ("A06", "1, 2", "Content-Length: 1, 2"),
        ]:
            raw = ("POST /v1/challenge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %s\r\n\r\n" % value).encode()
            # API.md: a declared body over 64 KiB is 413; a malformed header is MHD's 400 (BAD_INPUTS H2 proposes 400).
            want = {400, 413} if case_id == "A04" else {400}
            self.record("A", case_id, "H2", what, exchange(p, raw, check_close=True), {"status": want, "close": True})
        smuggled = b"GET /smuggled HTTP/1.1\r\nHost: x\r\n\r\n"
        raw = ("POST /v1/challenge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 0\r\n"
               "Content-Length: %d\r\n\r\n" % len(smuggled)).encode() + smuggled
        res, count = self.answers(raw)
        # RFC 9112 6.3: differing Content-Length values are unrecoverable: 400 and close. Two answers mean the
        # body was taken as a second request (the framing a proxy that reads the last value would not see).
        self.record("A", "A07", "H2", "two Content-Length fields (0 and %d) whose body is a GET /smuggled request" % len(smuggled), res,
                    {"status": 400, "close": True},
                    ok_extra=lambda r: "the body was executed as a second request" if count > 1 else None)
        self.transfer_encoding_and_length()
        chunked = lambda chunk: ("POST /v1/challenge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                                 "Transfer-Encoding: chunked\r\n\r\n").encode() + chunk
        self.record("A", "A09", "H4", "chunk size fffffffffffffffff1", exchange(p, chunked(b"fffffffffffffffff1\r\nabc\r\n"), check_close=True),
                    {"status": {400, 413}, "close": True})
        self.record("A", "A10", "H4", "chunk size that is not hex (zz)", exchange(p, chunked(b"zz\r\nabc\r\n0\r\n\r\n"), check_close=True),
                    {"status": 400, "close": True})
        self.record("A", "A11", "H4", "chunk extension of 5000 bytes",
                    exchange(p, chunked(b"2;" + b"e" * 5000 + b"\r\n{}\r\n0\r\n\r\n"), check_close=True),
                    {"status": {400, 413, 431}, "close": True, "src": "BAD_INPUTS"})
        raw = b"GET /" + b"a" * (100 * 1024) + b" HTTP/1.1\r\nHost: x\r\n\r\n"
        self.record("A", "A13", "H6", "request line of 100 KiB", exchange(p, raw, check_close=True), {"status": 414, "close": True})
        raw = b"GET /healthz HTTP/1.1\r\nHost: x\r\nX-Big: " + b"b" * (1 << 20) + b"\r\n\r\n"
        self.record("A", "A14", "H7", "one header of 1 MiB", exchange(p, raw, check_close=True), {"status": 431, "close": True})
        raw = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + b"".join(b"X-H%d: v\r\n" % i for i in range(5000)) + b"\r\n"
        self.record("A", "A15", "H7", "5,000 header fields", exchange(p, raw, check_close=True), {"status": {400, 431}, "close": True})
        for case_id, line, what in [
            ("A16", b"Bad Name: x", "header name containing a space"),
            ("A17", b"Bad\x00Name: x", "header name containing NUL"),
            ("A18", b"X-A: first\r\n folded", "obs-fold continuation line (RFC 9112: reject, or replace by a space)"),
            ("A18b", b"X-A: fi\x00rst", "header value containing NUL"),
            ("A19", b"NoColonHere", "header line without a colon"),
        ]:
            raw = b"GET /healthz HTTP/1.1\r\nHost: x\r\n" + line + b"\r\n\r\n"
            self.record("A", case_id, "H7", what, exchange(p, raw, check_close=True),
                        {"status": 400, "close": True, "src": "BAD_INPUTS" if case_id in ("A18", "A18b") else "API.md"})
        self.record("A", "A20", "H13", "HTTP/2 preface PRI * HTTP/2.0",
                    exchange(p, b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n", check_close=True), {"status": 505, "close": True})
        self.record("A", "A21", "H13", "GET /healthz HTTP/3.0",
                    exchange(p, b"GET /healthz HTTP/3.0\r\nHost: x\r\n\r\n", check_close=True), {"status": 505, "close": True})
        self.record("A", "A22", "H13", "lowercase method: get /healthz",
                    exchange(p, b"get /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", check_close=True),
                    {"status": {400, 405, 505}})
        self.record("A", "A23", "H13", "absolute-form target: GET http://127.0.0.1/healthz",
                    exchange(p, b"GET http://127.0.0.1/healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n", check_close=True),
                    {"status": {200, 400, 505}, "src": "BAD_INPUTS"})
        self.record("A", "A24", "H13", "garbage request line",
                    exchange(p, b"GARBAGE\r\n\r\n", check_close=True), {"status": {None, 400}, "close": True})
        for case_id, path, ctype, what in [
            ("A25", "/v1/challenge", "text/plain", "POST /v1/challenge with Content-Type: text/plain"),
            ("A26", "/v1/attest", "text/plain", "POST /v1/attest with Content-Type: text/plain"),
            ("A27", "/v1/token", None, "POST /v1/token without Content-Type"),
            ("A28", "/v1/attest", "application/x-www-form-urlencoded", "POST /v1/attest with a form Content-Type"),
        ]:
            body = json.dumps(self.attest_fields(challenge="x")).encode()
            self.record("A", case_id, "H14", what, post(p, path, body, ctype=ctype),
                        {"status": 415, "code": "unsupported_media_type", "reason": "content_type"})
        self.reset_mid_body()
        self.pipeline()
        te_thread.join(timeout=20)
        if te.get("status") is None and te.get("closed"):
            te["note"] = "closed without an answer after %.1f s" % (te["ms"] / 1000)
        self.record("A", "A12", "H5", "Transfer-Encoding: gzip, chunked", te or {"status": None, "body": b"", "closed": None,
                    "note": "no result", "ms": None}, {"status": 501, "close": True})
        raw = (b"POST /v1/challenge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: identity\r\n\r\n"
               b'{"client_id":"x"}')
        self.record("A", "A12b", "H5", "Transfer-Encoding: identity", exchange(p, raw, timeout=15, check_close=True),
                    {"status": 501, "close": True})

    def answers(self, raw, wait=2.0):
        """Sends `raw` and reads every answer that arrives within `wait` seconds (or until the close)."""
        sock = socket.create_connection((HOST, self.port), timeout=5)
        answers, closed = [], False
        try:
            sock.sendall(raw)
            reader = Reader(sock)
            deadline = time.monotonic() + wait
            while time.monotonic() < deadline and len(answers) < 5:
                try:
                    sock.settimeout(max(0.05, deadline - time.monotonic()))
                    status, _, body, _ = read_response(reader)
                    answers.append((status, body))
                except (EOFError, ConnectionResetError):
                    closed = True
                    break
                except OSError:
                    break
        finally:
            sock.close()
        res = {"status": answers[0][0] if answers else None, "headers": {}, "body": answers[0][1] if answers else b"",
               "closed": closed, "note": "%d answer(s): %s" % (len(answers), " then ".join(
                   "%s %s" % (st, "/".join(str(x) for x in problem({"body": b}))) for st, b in answers)), "ms": None}
        return res, len(answers)

    def transfer_encoding_and_length(self):
        """H3: both Transfer-Encoding: chunked and Content-Length. The body is valid only when read as
        chunked; read by Content-Length (5 bytes), the rest would be parsed as a second request."""
        body = json.dumps({"client_id": self.cid}).encode()
        chunk = b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)
        raw = ("POST /v1/challenge HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: 5\r\n"
               "Transfer-Encoding: chunked\r\n\r\n").encode() + chunk
        res, count = self.answers(raw)
        # Pass: one 400 (refused), or Transfer-Encoding wins (one 200); never two answers (body read two ways).
        self.record("A", "A08", "H3", "Content-Length: 5 and Transfer-Encoding: chunked (body valid only as chunked)", res,
                    {"status": {200, 400}}, ok_extra=lambda r: "body read two ways" if count > 1 else None)

    def reset_mid_body(self):
        """H12: the client resets the connection in the middle of an attestation's body; the challenge
        must not be consumed (the request was never complete)."""
        challenge = self.challenge()
        body = json.dumps(self.attest_fields(challenge=challenge)).encode()
        head, _ = request_bytes("POST", "/v1/attest", body)
        sock = socket.create_connection((HOST, self.port), timeout=5)
        sock.sendall(head + body[: len(body) // 2])
        time.sleep(0.2)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
        sock.close()  # RST
        time.sleep(0.2)
        res = post(self.port, "/v1/attest", body)
        code, reason = problem(res)
        self.record("A", "A29", "H12", "RST in the middle of a /v1/attest body, then the same challenge in a complete request", res,
                    {"status": 401, "code": "attestation_rejected"},
                    ok_extra=lambda r: "challenge consumed by the incomplete request" if reason in ("challenge_used", "challenge_unknown") else None)

    def pipeline(self):
        """H11: 1,000 pipelined GET /healthz on one connection, answered in order."""
        n = 1000
        sock = socket.create_connection((HOST, self.port), timeout=10)
        got = 0
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n" * n)
            reader = Reader(sock)
            for _ in range(n):
                status, _, _, _ = read_response(reader)
                if status != 200:
                    break
                got += 1
        except (EOFError, OSError):
            pass
        finally:
            sock.close()
        res = {"status": 200 if got == n else None, "headers": {}, "body": b"", "closed": None,
               "note": "%d of %d answered 200" % (got, n), "ms": None}
        self.record("A", "A30", "H11", "1,000 pipelined GET /healthz on one connection", res, {"status": 200})
