"""Nodes: attestd processes started on a database, and what a measurement asks of them."""

import os
import subprocess
import tempfile
import time

from attestd_testlib import Attestd

from .tools import APP_ID, SECRET, run


class Nodes:
    def __init__(self, options):
        self.bin = options.bin
        self.seconds = options.seconds
        self.work = tempfile.mkdtemp(prefix="bench-load.")
        self.state = os.path.join(self.work, "state")
        self.anchor = os.path.join(self.work, "anchor.pem")
        self.secret = os.path.join(self.work, "secret")
        with open(self.secret, "w") as f:
            f.write(SECRET + "\n")
        run([os.path.join(self.bin, "attestctl"), "simulate", "--write-trust-anchor", self.anchor, "--state", self.state])
        self.rows = []
        self.nodes = []
        self.operability = []  # (label, what, milliseconds) on the large tables
        self.cpu_us = {}  # attestd's CPU microseconds per operation, per round: {"attest": [...], "refresh SQLite": [...]}

    def start(self, db, count=1, extra=(), cpu=None):
        self.nodes = []
        for index in range(count):
            binary = os.path.join(self.bin, "attestd")
            # Every load comes from 127.0.0.1, as from a proxy: no per-address rate or connection cap (the
            # default cap of 32 would reset half of wrk's 64 connections and measure reconnects).
            args = ["--db", db, "--trust-anchor", self.anchor, "--address-rate", "0", "--attest-rate", "0", "--challenge-rate", "0",
                    "--connections-per-address", "0",
                    "--gateway-secret-file", self.secret, *extra]
            node = Attestd(binary, os.path.join(self.work, "node%d-%d.log" % (index, time.monotonic_ns())), args,
                           stdout=subprocess.DEVNULL, start_seconds=30)
            if cpu is not None:  # every thread of the process, the HTTP pool included
                run(["taskset", "-a", "-p", "-c", str(cpu), str(node.pid)])
            if not node.started():
                raise RuntimeError("attestd did not start: " + node.log_text()[-2000:])
            self.nodes.append(node)
        return [node.port for node in self.nodes]

    def stop(self):
        peak = max((self.peak_rss(node.pid) for node in self.nodes), default=0)
        for node in self.nodes:
            node.stop()
        self.nodes = []
        return peak

    @staticmethod
    def peak_rss(pid):
        try:
            with open("/proc/%d/status" % pid) as f:
                return int(next(line.split()[1] for line in f if line.startswith("VmHWM")))
        except (OSError, StopIteration):
            return 0

    def integration(self, db):
        return run([os.path.join(self.bin, "attestctl"), "integration", "create", "--db", db, "--workspace", "ws_bench", "--name",
                    "bench", "--team-id", "ABCDE12345", "--bundle-id", "com.example.bench", "--environment", "production"]).strip()

    def token(self, port, client_id):
        """A live access token of a synthetic device attested through the node on `port`."""
        return run([os.path.join(self.bin, "attest-load"), "token", "--port", str(port), "--client-id", client_id, "--app-id",
                    APP_ID, "--state", self.state]).strip()

    def introspect_script(self, token):
        """A wrk script that introspects `token` with the gateway secret; its path."""
        lua = os.path.join(self.work, "introspect.lua")
        with open(lua, "w") as f:
            f.write('wrk.method = "POST"\nwrk.body = "token=%s"\nwrk.headers["Content-Type"] = "application/x-www-form-urlencoded"\n'
                    'wrk.headers["Authorization"] = "Bearer %s"\n' % (token, SECRET))
        return lua
