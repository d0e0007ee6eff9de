"""Splits a perf profile of attestd under authorize load (scripts/profile-authorize) into the parts
of issue 22 item 1. Each figure is the share of attestd's samples in which the frame is on the
stack (children), so a part counts its callees; SQLite's fcntl and fstat are counted apart, since
libsqlite3 has no frame pointers and their callers are lost. The parts overlap a little (the
access handler contains most of the others); the rest is libmicrohttpd's parsing, the Swift
runtime (retain/release, allocation) and the kernel's scheduling.
Usage: python3 scripts/profile_split.py perf.data
"""
import re
import subprocess
import sys

data = sys.argv[1]
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


cats = [
    ("network: send (kernel, incl. waking the client)", children(r"^__send$")),
    ("network: recv", children(r"^__libc_recv$")),
    ("network: epoll_wait", children(r"^epoll_wait$")),
    ("routing (Router.select)", children(r"RouterV6select")),
    ("parsing the credential (Bearer)", children(r"BearerCredential")),
    ("headers into Swift (collectHeader)", children(r"connectionHeaders|collectHeader")),
    ("hashing the token (SHA-256)", children(r"DigestO4hash")),
    ("store lookup (Swift side; PostgreSQL: submitting to the sender)",
        children(r"SQLiteTokenStoreC4read|SQLiteTokenStoreCAA0d6LookupE|SQLiteTokenStoreC11activeToken|PostgresTokenStoreC11activeToken")),
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
