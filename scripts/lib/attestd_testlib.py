"""What the Python checks share (scripts/lib/check_*.py and the package scripts/lib/check_reliability/;
python3 standard library only).

- Tally: PASS/FAIL lines, their counts and the closing "N passed, N failed" line (scripts/lib/tally.sh is
  the same for the bash checks);
- Attestd: a real attestd on 127.0.0.1, port 0 (the port is read from its log), stopped with SIGTERM;
- create_integration: `attestctl integration create`, returning the client ID;
- free_port: a free TCP port on 127.0.0.1 (scripts/lib/free_port.py prints one for the bash scripts);
- a minimal HTTP/1.1 client on raw sockets (so that malformed bytes can be sent as they are).

Every wait is bounded in time; every socket has a timeout; everything listens on 127.0.0.1 only.
"""

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HOST = "127.0.0.1"


# ---------------------------------------------------------------------------------------------
# PASS/FAIL lines


class Tally:
    """Prints "PASS: text" / "FAIL: text[: detail]" lines (to `out`), counts them, and ends with the line
    "N passed, N failed" (what CI reads). scripts/lib/tally.sh prints the same lines for the bash checks."""

    def __init__(self, out=None):
        self.out = out
        self.passed = 0
        self.failed = 0
        self.failures = []

    def _print(self, line):
        print(line, file=self.out or sys.stdout, flush=True)

    def pass_(self, text):
        self.passed += 1
        self._print("PASS: " + text)

    def fail(self, text, detail=""):
        self.failed += 1
        self.failures.append(text)
        self._print("FAIL: " + text + (": " + detail if detail else ""))

    def check(self, ok, text, detail=""):
        """PASS when `ok`, else FAIL with `detail` (the why) after the text."""
        if ok:
            self.pass_(text)
        else:
            self.fail(text, detail)
        return bool(ok)

    def absorb(self, output):
        """Prints another checker's output and counts its PASS:/FAIL: lines as this tally's."""
        out = self.out or sys.stdout
        out.write(output if output.endswith("\n") or not output else output + "\n")
        out.flush()
        lines = output.splitlines()
        self.passed += sum(line.startswith("PASS: ") for line in lines)
        self.failed += sum(line.startswith("FAIL: ") for line in lines)

    def summary(self):
        return "%d passed, %d failed" % (self.passed, self.failed)

    def finish(self):
        """Prints the closing line; returns the exit status (1 when anything failed)."""
        self._print(self.summary())
        return 1 if self.failed else 0


# ---------------------------------------------------------------------------------------------
# processes


def exit_status(returncode):
    """A Popen return code as a shell reports it (128 + N for a process killed by signal N)."""
    if returncode is None:
        return None
    return 128 - returncode if returncode < 0 else returncode


def free_port():
    """A TCP port free on 127.0.0.1 now (bound, read and released: the caller binds it next)."""
    with socket.socket() as s:
        s.bind((HOST, 0))
        return s.getsockname()[1]


def alive(pid):
    """True while /proc/PID exists and is not a zombie."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return not any(line.startswith("State:") and line.split()[1] == "Z" for line in f)
    except OSError:
        return False


class Attestd:
    """attestd --listen 127.0.0.1:0 ARGS..., its stderr in `log`."""

    PORT = re.compile(r'"listen\.port":([0-9]+)')
    ADMIN_PORT = re.compile(r'"admin\.listen":"[^"]*:([0-9]+)"')

    def __init__(self, binary, log, args, stdout=None, start_seconds=10.0):
        self.log = log
        self.port = None
        self.admin_port = None
        with open(log, "wb") as err:
            # The admin listener on a free port too, unless the caller chose: its default (8081)
            # would collide between checks running at once.
            admin = [] if "--admin-listen" in args else ["--admin-listen", "%s:0" % HOST]
            self.proc = subprocess.Popen([binary, "--listen", "%s:0" % HOST, *admin, *args], stdout=stdout, stderr=err)
        self.pid = self.proc.pid
        deadline = time.monotonic() + start_seconds
        while time.monotonic() < deadline:
            match = self.PORT.search(self.log_text())
            if match:
                self.port = int(match.group(1))
                admin = self.ADMIN_PORT.search(self.log_text())
                self.admin_port = int(admin.group(1)) if admin else None
                return
            if self.proc.poll() is not None:
                break
            time.sleep(0.1)

    def started(self):
        return self.port is not None

    def log_text(self):
        try:
            with open(self.log, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def running(self):
        return self.proc.poll() is None

    def stop(self, drain_seconds=10.0):
        """SIGTERM, at most `drain_seconds` to drain, then SIGKILL; returns the exit status as a shell
        reports it."""
        if self.proc.poll() is None:
            try:
                self.proc.send_signal(signal.SIGTERM)
            except OSError:
                pass
            try:
                self.proc.wait(timeout=drain_seconds)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return exit_status(self.proc.returncode)

    def kill9(self):
        try:
            self.proc.kill()
        except OSError:
            pass
        self.proc.wait()
        return exit_status(self.proc.returncode)


def create_integration(attestctl, db, workspace, name, team_id, bundle_id, extra=(), stderr=subprocess.DEVNULL):
    """attestctl integration create; the client ID (from --json when `extra` asks for it)."""
    out = subprocess.run(
        [attestctl, "integration", "create", "--db", db, "--workspace", workspace, "--name", name, "--team-id", team_id,
         "--bundle-id", bundle_id, *extra], stdout=subprocess.PIPE, stderr=stderr, check=True, timeout=60, text=True).stdout
    return json.loads(out)["client_id"] if "--json" in extra else out.strip()


# ---------------------------------------------------------------------------------------------
# A minimal HTTP/1.1 client on raw sockets


class Reader:
    def __init__(self, sock):
        self.sock = sock
        self.buf = b""

    def fill(self):
        data = self.sock.recv(65536)
        if not data:
            raise EOFError("closed")
        self.buf += data

    def until(self, sep, limit=1 << 20):
        while sep not in self.buf:
            if len(self.buf) > limit:
                raise ValueError("header block too long")
            self.fill()
        i = self.buf.index(sep) + len(sep)
        out, self.buf = self.buf[:i], self.buf[i:]
        return out

    def exact(self, n):
        while len(self.buf) < n:
            self.fill()
        out, self.buf = self.buf[:n], self.buf[n:]
        return out


def parse_head(head):
    lines = head.decode("latin-1").split("\r\n")
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers.setdefault(k.strip().lower(), []).append(v.strip())
    return lines[0], headers


def read_response(reader):
    head = reader.until(b"\r\n\r\n")
    first, headers = parse_head(head)
    status = int(first.split(" ", 2)[1])
    length = int(headers.get("content-length", ["0"])[0])
    return status, headers, reader.exact(length), head


def healthz(port, timeout=5.0, source=None):
    """GET /healthz on a new connection: (status or None, milliseconds)."""
    started = time.monotonic()
    try:
        sock = socket.create_connection((HOST, port), timeout=timeout, source_address=(source, 0) if source else None)
        try:
            sock.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
            status = read_response(Reader(sock))[0]
        finally:
            sock.close()
    except (OSError, EOFError, ValueError):
        status = None
    return status, (time.monotonic() - started) * 1000


def fd_count(pid):
    try:
        return len(os.listdir("/proc/%d/fd" % pid))
    except OSError:
        return 0


def run_check(name, body, mode=0o700):
    """Runs `body(tally, work)` in a fresh temporary directory (kept with KEEP=1, else removed),
    counts a crash of the checker as a failure (never a silent pass), prints "NAME: N s" and exits
    with the tally's status."""
    work = tempfile.mkdtemp(prefix=name + ".")
    os.chmod(work, mode)
    tally = Tally()
    started = time.monotonic()
    try:
        body(tally, work)
    except Exception as error:
        tally.fail("%s crashed: %r" % (name, error))
    finally:
        if os.environ.get("KEEP"):
            print("kept %s" % work)
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("%s: %.0f s" % (name, time.monotonic() - started))
    sys.exit(tally.finish())
