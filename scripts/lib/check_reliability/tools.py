"""What the parts share besides HTTP: the sqlite3 CLI, /proc readings, attestctl simulate's reports."""

import re
import subprocess


def ms_to_s(ms):
    return ms / 1000


def sqlite_cli(db, query):
    """The sqlite3 CLI (a separate process, as an operator would run it), its output without the last newline."""
    run = subprocess.run(["sqlite3", "-cmd", ".timeout 5000", db, query], capture_output=True, text=True, timeout=60)
    return run.stdout.rstrip("\n")


def rss_kb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def sim_failures(*paths):
    """Failed steps in attestctl simulate reports."""
    n = 0
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                fields = line.split()
                if len(fields) >= 3 and fields[0] in ("challenge", "attest", "refresh", "authorize") and fields[2].isdigit():
                    n += int(fields[2])
    return n


def sim_requests(*paths):
    n = 0
    for path in paths:
        with open(path, errors="replace") as f:
            for line in f:
                match = re.match(r"([0-9]*) requests in", line)
                if match and match.group(1):
                    n += int(match.group(1))
    return n
