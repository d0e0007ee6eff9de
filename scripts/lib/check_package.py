"""The parts of scripts/check package that need more than a shell (python3 standard library only):

    python3 scripts/lib/check_package.py burst BASE CLIENT_ID
        100 challenges at once from 127.0.0.1 (12 threads), then 200 connections held open together, each
        answering GET /healthz. Prints "ok limited other seconds served refused" (limited: 429s).

    python3 scripts/lib/check_package.py syscall-filter UNIT GROUPS
        The unit's SystemCallFilter= as an allow list, the groups (@...) expanded with GROUPS (the output of
        `systemd-analyze syscall-filter`). Prints two lines: "COUNT error=ERRNO" (or "signal=SIGSYS": the
        unit's SystemCallErrorNumber=), then the allowed calls as strace's inject list ("?name,?name,...").
        Exits 1 with a message when the unit has no allow list or starts with a deny list.

    python3 scripts/lib/check_package.py doc-block FILE SECTION N
        The Nth ```sh block of FILE's "## SECTION", as written (the operator's commands the check runs).
"""

import http.client
import json
import re
import socket
import sys
import time
from concurrent.futures import ThreadPoolExecutor

# More than attestd's default per-address burst (40) plus one second's refill (20): its clock has
# whole seconds, so a burst that crosses a second boundary may take 60 without a 429.
CHALLENGES = 100


def burst(base, client_id):
    host, port = base.removeprefix("http://").split(":")
    body = json.dumps({"client_id": client_id})

    def challenge(_):
        try:
            connection = http.client.HTTPConnection(host, int(port), timeout=5)
            connection.request("POST", "/v1/challenge", body, {"Content-Type": "application/json"})
            return connection.getresponse().status
        except Exception:
            return 0

    started = time.monotonic()
    with ThreadPoolExecutor(12) as pool:
        statuses = list(pool.map(challenge, range(CHALLENGES)))
    seconds = time.monotonic() - started
    ok, limited = statuses.count(200), statuses.count(429)
    sockets = []
    for _ in range(200):
        s = socket.create_connection((host, int(port)), timeout=5)
        sockets.append(s)
    served = refused = 0
    for s in sockets:
        try:
            s.sendall(b"GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")
            served += s.recv(64).startswith(b"HTTP/1.1 200")
        except OSError:
            pass
    for s in sockets:
        s.close()
    refused = 200 - served
    print(ok, limited, CHALLENGES - ok - limited, f"{seconds:.2f}", served, refused)


def syscall_filter(unit, groups_file):
    groups, current = {}, None
    for line in open(groups_file):
        if line.startswith("@"):  # a group; its members are indented, other groups among them
            current = groups[line.split()[0]] = []
        elif current is not None and line.strip() and not line.strip().startswith("#"):
            current.append(line.strip())

    def expand(name):
        if not name.startswith("@"):
            return {name}
        return set().union(set(), *(expand(member) for member in groups.get(name, [])))

    allowed, error = None, "SIGSYS"
    for line in open(unit):
        key, _, value = line.strip().partition("=")
        if key == "SystemCallErrorNumber":
            error = value
        elif key == "SystemCallFilter":
            names = set().union(set(), *(expand(n) for n in value.lstrip("~").split()))
            if value.startswith("~"):
                if allowed is None:
                    sys.exit("a deny-list SystemCallFilter= first is not emulated")
                allowed -= names
            else:
                allowed = (allowed or set()) | names
    if not allowed:
        sys.exit("no SystemCallFilter= allow list in the unit")
    print(len(allowed), ("error=" if error.startswith("E") else "signal=") + error)
    print(",".join("?" + name for name in sorted(allowed)))


def doc_block(path, section, number):
    """Prints the NUMBERth (from 1) ```sh block of the `## SECTION` of the Markdown file PATH."""
    with open(path) as f:
        text = f.read()
    start = text.index("\n## %s\n" % section)
    end = text.find("\n## ", start + 1)
    blocks = re.findall(r"\n```sh\n(.*?)\n```", text[start:end if end > 0 else len(text)], re.S)
    print(blocks[int(number) - 1])


COMMANDS = {"burst": (burst, 2), "syscall-filter": (syscall_filter, 2), "doc-block": (doc_block, 3)}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in COMMANDS or len(sys.argv) != 2 + COMMANDS[sys.argv[1]][1]:
        sys.exit(__doc__)
    COMMANDS[sys.argv[1]][0](*sys.argv[2:])
