"""HTTP on raw sockets for the reliability checks (so that malformed bytes can be sent as they are), and
GET /healthz latency on a new connection each time."""

import base64
import json
import math
import os
import select
import socket
import time

from attestd_testlib import HOST, Reader, healthz, read_response

# GET /healthz on a new connection: (status or None, ms); in the shared module.
health_once = healthz


def send_progressively(sock, data, piece=16384):
    """Sends in pieces and stops as soon as the server answers (it may close and reset early)."""
    for off in range(0, len(data), piece):
        if select.select([sock], [], [], 0)[0]:
            return "server answered before the request was complete"
        try:
            sock.sendall(data[off : off + piece])
        except OSError as error:
            return "send: %s" % error
    return None


def wait_closed(sock, seconds):
    """True when the server closes (EOF or reset) within `seconds`; extra bytes are read and dropped."""
    end = time.monotonic() + seconds
    try:
        while True:
            left = end - time.monotonic()
            if left <= 0:
                return False
            sock.settimeout(left)
            if not sock.recv(65536):
                return True
    except socket.timeout:
        return False
    except OSError:
        return True


def exchange(port, data, after=b"", timeout=5.0, check_close=False, close_wait=3.0):
    """Sends `data`, reads one response, then sends `after` (a body sent only after the answer)."""
    res = {"status": None, "headers": {}, "body": b"", "closed": None, "note": None, "ms": None}
    started = time.monotonic()
    sock = socket.create_connection((HOST, port), timeout=timeout)
    try:
        res["note"] = send_progressively(sock, data)
        reader = Reader(sock)
        try:
            res["status"], res["headers"], res["body"], _ = read_response(reader)
        except (EOFError, ConnectionResetError, BrokenPipeError):
            res["closed"] = True  # closed without an answer
        except socket.timeout:
            res["note"] = "no answer within %.0f s" % timeout
        res["ms"] = (time.monotonic() - started) * 1000
        if after:
            try:
                sock.sendall(after)
            except OSError:
                pass
        if check_close and res["closed"] is None:
            res["closed"] = wait_closed(sock, close_wait)
    finally:
        sock.close()
    return res


def problem(res):
    try:
        doc = json.loads(res["body"])
        return doc.get("code"), doc.get("reason")
    except (ValueError, AttributeError):
        return None, None


def request_bytes(method, path, body=b"", ctype="application/json", extra="", close=True, length=None):
    head = "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\n" % (method, path)
    if close:
        head += "Connection: close\r\n"
    if ctype is not None:
        head += "Content-Type: %s\r\n" % ctype
    if method == "POST" or body:
        head += "Content-Length: %d\r\n" % (len(body) if length is None else length)
    return head.encode() + extra.encode() + b"\r\n", body


def post(port, path, body, ctype="application/json", extra=""):
    head, body = request_bytes("POST", path, body, ctype, extra)
    return exchange(port, head + body)


def post_json(port, path, fields):
    return post(port, path, json.dumps(fields).encode())


def b64(data):
    return base64.b64encode(data).decode()


def b64url(data):
    return base64.urlsafe_b64encode(data).decode().rstrip("=")


def percentile(values, p):
    ordered = sorted(values)
    return ordered[max(0, math.ceil(p / 100 * len(ordered)) - 1)] if ordered else float("nan")


# ---------------------------------------------------------------------------------------------
# latency: GET /healthz on a new connection each time


def authorize_once(port):
    """GET /v1/authorize with a well-formed unknown token: a database read, answered 401."""
    started = time.monotonic()
    token = "atk_" + b64url(os.urandom(32))
    res = exchange(port, ("GET /v1/authorize HTTP/1.1\r\nHost: x\r\nConnection: close\r\nAuthorization: Bearer %s\r\n\r\n" % token).encode())
    return res["status"], (time.monotonic() - started) * 1000


def cmd_latency(a):
    lat, failures = [], 0
    deadline = time.monotonic() + a.max_seconds
    for _ in range(a.n):
        if time.monotonic() > deadline:
            break
        status, ms = health_once(a.port, a.timeout)
        lat.append(ms)
        if status != 200:
            failures += 1
        time.sleep(a.interval)
    return {"n": len(lat), "failures": failures, "p50": round(percentile(lat, 50), 2), "p90": round(percentile(lat, 90), 2),
            "p99": round(percentile(lat, 99), 2), "max": round(max(lat), 2) if lat else None}
