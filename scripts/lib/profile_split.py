"""Splits a perf profile of attestd (scripts/profile) into the parts of issue 22 item 1.

Authorize and introspect (the default): Each figure is the share of attestd's samples in which the frame is on the
stack (children), so a part counts its callees; SQLite's fcntl and fstat are counted apart, since
libsqlite3 has no frame pointers and their callers are lost. The parts overlap a little (the
access handler contains most of the others); the rest is libmicrohttpd's parsing, the Swift
runtime (retain/release, allocation) and the kernel's scheduling.

Attest (`--attest perf.data RATE SECONDS`: the rate attest ran at and the seconds recorded, at
1999 samples per second on one core): the work of each part per attestation in microseconds,
from the samples each library took (self time: OpenSSL and SQLite have no frame pointers) and
the system calls' stacks, and the share of the core left idle, which with one HTTP thread is
time spent waiting for a flush.
Usage: python3 scripts/lib/profile_split.py perf.data
       python3 scripts/lib/profile_split.py --attest perf.data RATE SECONDS
"""
import re
import subprocess
import sys

FREQUENCY = 1999
attest = sys.argv[1] == "--attest"
data = sys.argv[2] if attest else sys.argv[1]
out = subprocess.run(["perf", "report", "-i", data, "--children", "--sort", "sym", "-g", "none"],
                     capture_output=True, text=True).stdout
rows = []
for line in out.splitlines():
    m = re.match(r"\s+([0-9.]+)%\s+([0-9.]+)%\s+\[(.)\]\s+(.*)", line)
    if m:
        rows.append((float(m.group(1)), float(m.group(2)), m.group(3), m.group(4)))


def children(pattern):
    found = [r[0] for r in rows if re.search(pattern, r[3])]
    return max(found) if found else 0.0




def split_attest(rate, seconds):
    report = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "dso", "-g", "none"],
                            capture_output=True, text=True).stdout
    samples = subprocess.run(["perf", "script", "-i", data, "-F", "period"], capture_output=True, text=True).stdout.count("\n")
    dsos = {}
    for line in report.splitlines():
        m = re.match(r"\s+([0-9.]+)%\s+(\S+)", line)
        if m:
            dsos[m.group(2)] = float(m.group(1))
    busy = samples / float(seconds * FREQUENCY)
    cpu_us = busy * 1e6 / rate
    write_calls = children(r"^fdatasync$") + children(r"^__libc_pwrite$") + children(r"^__GI___fcntl64_nocancel_adjusted$")
    network = children(r"^__libc_sendmsg$") + children(r"^__send$") + children(r"^__libc_recv$") + children(r"^epoll_wait$")
    parts = [
        ("OpenSSL (libcrypto: the verification, the token's hash)", dsos.get("libcrypto.so.3", 0.0)),
        ("the durable commit's system calls (pwrite, fdatasync, locks)", write_calls),
        ("SQLite (its own code)", sum(v for k, v in dsos.items() if k.startswith("libsqlite3"))),
        ("network system calls (send, recv, epoll)", network),
        ("Swift code, the Swift runtime, libc (allocation)", sum(dsos.get(k, 0.0) for k in ("attestd", "libswiftCore.so", "libc.so.6"))),
    ]
    print("attest at %.0f per second; %d samples in %s s: the core busy %.0f %% of the time, %.0f us of CPU per attestation"
          % (rate, samples, seconds, busy * 100, cpu_us))
    for name, share in parts:
        print("%-64s %5.1f %%  %6.0f us per attestation" % (name, share, share * cpu_us / 100))
    print("%-64s %5.0f %%  %6.0f us per attestation" % ("idle (waiting for a flush, with one thread)", (1 - busy) * 100,
                                                         (1 - busy) * 1e6 / rate))


if attest:
    split_attest(float(sys.argv[3]), float(sys.argv[4]))
    sys.exit(0)

cats = [
    # send() for an answer of headers only (authorize), sendmsg() for headers and a body (introspect).
    ("network: send (kernel, incl. waking the client)", children(r"^__send$|^__libc_sendmsg$")),
    ("network: recv", children(r"^__libc_recv$")),
    ("network: epoll_wait", children(r"^epoll_wait$")),
    ("routing (Router.select)", children(r"RouterV6select")),
    ("parsing the credential (Bearer)", children(r"BearerCredential")),
    ("headers into Swift (collectHeader)", children(r"connectionHeaders|collectHeader")),
    ("hashing the token (SHA-256)", children(r"DigestO4hash")),
    ("store lookup (Swift side; PostgreSQL: submitting to the sender)",
        children(r"SQLiteTokenStoreC4read|SQLiteTokenStoreCAA0d6LookupE|SQLiteTokenStoreC11activeToken|PostgresTokenStoreC11activeToken|PostgresTokenStore.*06activeD0")),
    ("PostgreSQL: the sender's round trips (libpq, off the workers)", children(r"PostgresStatementGroups.*send")),
    ("store: SQLite's fcntl locks", children(r"^__fcntl64_nocancel_adjusted$")),
    ("store: SQLite's fstat", children(r"^__GI___fstatat64$")),
    ("logging (Logger.log, incl. write)", children(r"LoggerV3log__6fields")),
    ("metrics (recordRequest)", children(r"MetricsC13recordRequest")),
    ("deadlines and bookkeeping", children(r"RequestDeadlinesC14requestStarted") + children(r"RequestDeadlinesC16requestCompleted")
        + children(r"RequestDeadlinesC11beginAnswer") + children(r"PendingAnswer")),
    ("lock waits (futex)", children(r"^__GI___lll_lock_wait$") + children(r"^__GI___lll_lock_wake$") + children(r"_MutexHandleV9_lockSlow")),
]
for name, value in cats:
    print("%-50s %5.1f %%" % (name, value))
print("%-50s %5.1f %%" % ("whole access handler (routing to response)", children(r"AttestHTTPServer13accessHandler")))
