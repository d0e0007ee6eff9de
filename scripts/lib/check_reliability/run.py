"""The run: the five parts in order, each on its own attestd, one tally; cleanup of everything started."""

import argparse
import contextlib
import io
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import traceback

from attestd_testlib import Attestd, Tally, create_integration, healthz

from . import busy, crash, slow, soak, wire
from .options import PARTS, parse_options
from .tools import sqlite_cli

# Each part is a function of the Run (in the order of PARTS).
PART_FUNCTIONS = {"wire": wire.part, "slow": slow.part, "crash": crash.part, "busy": busy.part, "soak": soak.part}
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))


class Run:
    """What the parts share: the options, the tally, the seeded random moments, the work directory with
    private copies of the binaries, the attestd last started."""

    def __init__(self, o):
        self.o = o
        self.tally = Tally()
        self.rng = random.Random(o.seed)
        self.work = tempfile.mkdtemp(prefix="attestd-reliability.", dir="/tmp")
        self.starts = 0
        self.server = None
        self.fixtures = os.path.join(ROOT, "fixtures")
        # Private copies: other builds in this checkout may replace the binaries while this runs.
        bindir = os.environ["ATTESTD_BIN"]
        for name in ("attestd", "attestctl"):
            shutil.copy2(os.path.join(bindir, name), self.work)
        self.attestd = os.path.join(self.work, "attestd")
        self.attestctl = os.path.join(self.work, "attestctl")
        self.root = os.path.join(self.work, "root.pem")
        self.sim_state = os.path.join(self.work, "sim")
        subprocess.run([self.attestctl, "simulate", "--write-trust-anchor", self.root, "--state", self.sim_state],
                       stdout=subprocess.DEVNULL, check=True, timeout=60)

    # -- helpers ----------------------------------------------------------------------------

    def path(self, *names):
        return os.path.join(self.work, *names)

    def checker(self, fn, **kwargs):
        """Runs a checker (wire, crashcheck, busy) with `kwargs` as its arguments and tallies its lines."""
        buf = io.StringIO()
        error = None
        try:
            with contextlib.redirect_stdout(buf):
                fn(argparse.Namespace(**kwargs))
        except (Exception, SystemExit) as caught:  # a checker that cannot finish fails
            traceback.print_exc()
            error = caught
        out = buf.getvalue()
        if error is not None:
            out += ("" if out.endswith("\n") or not out else "\n") + "FAIL: %s stopped with an error: %s\n" % (fn.__name__[4:], error)
        self.tally.absorb(out)

    def start_attestd(self, db, *flags):
        self.starts += 1
        log = self.path("attestd-%d.log" % self.starts)
        server = Attestd(self.attestd, log, ["--db", db, "--trust-anchor", self.root, *flags], stdout=subprocess.DEVNULL,
                         start_seconds=15)
        self.server = server
        if not server.started():
            print("attestd did not start; its log:", file=sys.stderr)
            sys.stderr.write("".join(server.log_text().splitlines(True)[-20:]))
            raise RuntimeError("attestd did not start")
        return server

    def healthy(self):
        if not self.server.running():
            return False
        status, _ = healthz(self.server.port)
        return status is not None and status < 400

    def new_integration(self, db, name):
        return create_integration(self.attestctl, db, "ws_rel", name, "ABCDE12345", "com.example.app")

    def simulate_args(self, port, cid, *options):
        return [self.attestctl, "simulate", "--url", "http://127.0.0.1:%d" % port, "--client-id", cid, "--team-id", "ABCDE12345",
                "--bundle-id", "com.example.app", "--state", self.sim_state, *options]

    def rows(self, db):
        return sqlite_cli(db, "SELECT (SELECT count(*) FROM devices)||' devices, '||(SELECT count(*) FROM tokens)||' tokens, '||"
                              "(SELECT count(*) FROM integrations)||' integrations'")

    # -- all --------------------------------------------------------------------------------

    def part(self, number, name):
        started = time.monotonic()
        try:
            PART_FUNCTIONS[name](self)
        except Exception as error:  # a part that cannot go on fails; the next part still runs
            traceback.print_exc()
            self.tally.fail("part %d (%s) stopped with an error: %s" % (number, name, error))
            if self.server is not None and self.server.running():
                self.server.stop()
        print("   (part %d: %d s)" % (number, time.monotonic() - started))

    def cleanup(self):
        kill_children(signal.SIGTERM)
        time.sleep(0.3)
        kill_children(signal.SIGKILL)
        if self.o.keep:
            os.makedirs(self.o.keep, exist_ok=True)
            shutil.copytree(self.work, self.o.keep, dirs_exist_ok=True, ignore=shutil.ignore_patterns("attestd", "attestctl"))
            print("raw results kept in %s" % self.o.keep, file=sys.stderr)
        shutil.rmtree(self.work, ignore_errors=True)


def children(pid):
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open("/proc/%s/stat" % entry) as f:
                    stat = f.read()
            except OSError:
                continue
            if int(stat[stat.rindex(")") + 2 :].split()[1]) == pid:
                found.append(int(entry))
    return found


def kill_tree(pid, sig):
    """The process and its descendants, by id."""
    for child in children(pid):
        kill_tree(child, sig)
    try:
        os.kill(pid, sig)
    except OSError:
        pass


def kill_children(sig):
    for child in children(os.getpid()):
        kill_tree(child, sig)


def versions():
    try:
        swift = subprocess.run(["swift", "--version"], capture_output=True, text=True, timeout=60).stdout.splitlines()
        swift = swift[0].split(" (")[0] if swift else ""
    except (OSError, subprocess.TimeoutExpired):
        swift = ""
    mhd = subprocess.run(["dpkg-query", "-W", "-f=libmicrohttpd ${Version}", "libmicrohttpd12"], capture_output=True,
                         text=True).stdout
    return swift, mhd


def main(argv):
    if argv[:1] == ["--check-options"]:  # scripts/checks/reliability checks the command line before it installs or builds
        parse_options(argv[1:], checking=True)
        return 0
    o = parse_options(argv)
    sys.stdout.reconfigure(line_buffering=True)

    def interrupted(signum, frame):
        raise SystemExit(130)

    signal.signal(signal.SIGINT, interrupted)
    signal.signal(signal.SIGTERM, interrupted)
    run = Run(o)
    try:
        swift, mhd = versions()
        print("scripts/check reliability: %s form, parts %s, seed %d, %d cores, %s, %s" % (
            "quick" if o.quick else "long", o.only, o.seed, len(os.sched_getaffinity(0)), swift, mhd))
        started = time.monotonic()
        for number, name in enumerate(PARTS, 1):
            if name in o.parts:
                run.part(number, name)
        print("total %d s" % (time.monotonic() - started))
        return run.tally.finish()
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        run.cleanup()

