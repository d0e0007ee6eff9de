"""Slow connections from one address past the 1024-connection limit, and from many addresses, while
/healthz is probed from another address (part 2, slow.py, runs them)."""

import socket
import time

from attestd_testlib import HOST

from .rawhttp import health_once


def cmd_connlimit(a):
    socks = []
    for _ in range(a.n):
        try:
            s = socket.create_connection((HOST, a.port), timeout=2)
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
            socks.append(s)
        except OSError:
            break
    opened = len(socks)
    started = time.monotonic()
    probes, next_trickle = [], started + a.interval
    while time.monotonic() - started < a.seconds:
        probes.append(health_once(a.port, 2, a.source))
        if time.monotonic() >= next_trickle:
            for s in socks:
                try:
                    s.send(b"X-a: b\r\n")
                except OSError:
                    pass
            next_trickle += a.interval
        time.sleep(1)
    alive = 0
    for s in socks:
        s.setblocking(False)
        try:
            s.recv(1)  # b"" (closed) or an answer: not held open any more
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
        s.close()
    ok = sum(st == 200 for st, _ in probes)
    return {"opened": opened, "still_open_at_end": alive, "probes": len(probes), "probes_ok": ok,
            "probe_max_ms": round(max(ms for _, ms in probes), 1) if probes else None}


def cmd_many_addresses(port, sources, per_source, interval, seconds, probe_source):
    """`per_source` connections from each of `sources`, each trickling one header line every
    `interval` seconds (never silent long enough for an idle timeout); /healthz probed from
    `probe_source` every half second for `seconds`. Returns what was opened and how the probes went."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
        want = len(sources) * per_source + 256
        if soft < want:
            resource.setrlimit(resource.RLIMIT_NOFILE, (min(want, hard), hard))
    except (ImportError, ValueError, OSError):
        pass
    socks = []
    for source in sources:
        for _ in range(per_source):
            try:
                s = socket.create_connection((HOST, port), timeout=2, source_address=(source, 0))
                s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n")
                socks.append(s)
            except OSError:
                pass
    started = time.monotonic()
    probes, next_trickle = [], started + interval
    while time.monotonic() - started < seconds:
        probes.append(health_once(port, 2, probe_source))
        if time.monotonic() >= next_trickle:
            for s in socks:
                try:
                    s.send(b"X-a: b\r\n")
                except OSError:
                    pass
            next_trickle += interval
        time.sleep(0.5)
    cut = 0
    for s in socks:
        s.setblocking(False)
        try:
            s.recv(64)  # an answer (408) or the close (b""): cut off
            cut += 1
        except BlockingIOError:
            pass  # still held open
        except OSError:
            cut += 1  # reset: cut off
        s.close()
    ok = [ms for status, ms in probes if status == 200]
    return {"attempted": len(sources) * per_source, "accepted_then_held": len(socks), "cut_off_by_end": cut,
            "probes": len(probes), "probes_ok": len(ok), "probe_max_ms": round(max((ms for _, ms in probes), default=0), 1)}
