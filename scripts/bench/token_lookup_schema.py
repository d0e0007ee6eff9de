#!/usr/bin/env python3
"""The token lookup's cost on SQLite before and after migration 0012, as a ratio in one run.

    python3 scripts/bench/token_lookup_schema.py

Builds two throwaway databases in /tmp with the same million tokens: tokens WITHOUT ROWID (0.2.0)
and the rowid table with a UNIQUE index on token_hash (0.3.0); runs the statement attestd runs for
a token lookup that memory does not answer (each release's selectActiveToken), 200,000 lookups of
random live tokens on each, alternated for 3 rounds; prints each round and the ratio of the best
rounds. Through Python's sqlite3, on the same Debian libsqlite3 attestd links: the Swift process
adds the same small cost on both sides. Removes its files.
"""
import hashlib, os, random, sqlite3, time
N, LOOKUPS, ROUNDS = 1_000_000, 200_000, 3
def build(path, rowid):
    if os.path.exists(path): os.remove(path)
    db = sqlite3.connect(path)
    db.executescript("""
    PRAGMA journal_mode=WAL;
    CREATE TABLE integrations (client_id TEXT PRIMARY KEY, status TEXT, suspended_at INTEGER);
    CREATE TABLE devices (key_id BLOB PRIMARY KEY, status TEXT);
    """)
    if rowid:
        db.execute("CREATE TABLE tokens (seq INTEGER PRIMARY KEY, token_hash BLOB NOT NULL UNIQUE, client_id TEXT, workspace_id TEXT, key_id BLOB, scope TEXT, issued_at INTEGER, expires_at INTEGER, debug_token_id TEXT) STRICT")
    else:
        db.execute("CREATE TABLE tokens (token_hash BLOB NOT NULL PRIMARY KEY, client_id TEXT, workspace_id TEXT, key_id BLOB, scope TEXT, issued_at INTEGER, expires_at INTEGER) STRICT, WITHOUT ROWID")
    db.execute("CREATE INDEX tokens_by_key ON tokens (key_id)")
    db.execute("INSERT INTO integrations VALUES ('c', 'active', NULL)")
    db.executemany("INSERT INTO devices VALUES (?, 'active')", ((hashlib.sha256(i.to_bytes(8,'big')+b'd').digest(),) for i in range(100_000)))
    cols = "token_hash, client_id, workspace_id, key_id, scope, issued_at, expires_at"
    db.executemany(f"INSERT INTO tokens ({cols}) VALUES (?, 'c', 'ws', ?, 'messages', 1, 9999999999)",
        ((hashlib.sha256(i.to_bytes(8,'big')).digest(), hashlib.sha256((i % 100_000).to_bytes(8,'big')+b'd').digest()) for i in range(N)))
    db.commit(); return db
old = build("/tmp/lk_old.sqlite", False)
new = build("/tmp/lk_new.sqlite", True)
q_old = "SELECT t.token_hash, t.client_id, t.workspace_id, t.key_id, t.scope, t.issued_at, t.expires_at FROM tokens t JOIN integrations i ON i.client_id = t.client_id JOIN devices d ON d.key_id = t.key_id WHERE t.token_hash = ? AND t.expires_at > ? AND i.status = 'active' AND i.suspended_at IS NULL AND d.status = 'active'"
q_new = "SELECT t.token_hash, t.client_id, t.workspace_id, t.key_id, t.scope, t.issued_at, t.expires_at, t.debug_token_id FROM tokens t JOIN integrations i ON i.client_id = t.client_id LEFT JOIN devices d ON d.key_id = t.key_id WHERE t.token_hash = ? AND t.expires_at > ? AND i.status = 'active' AND i.suspended_at IS NULL AND (d.status = 'active' OR t.debug_token_id IS NOT NULL)"
keys = [hashlib.sha256(random.randrange(N).to_bytes(8,'big')).digest() for _ in range(LOOKUPS)]
def run(db, q):
    start = time.perf_counter()
    for k in keys: db.execute(q, (k, 5)).fetchone()
    return time.perf_counter() - start
times = {"0.2.0": [], "0.3.0": []}
for r in range(ROUNDS):
    times["0.2.0"].append(run(old, q_old)); times["0.3.0"].append(run(new, q_new))
for k, v in times.items(): print(k, ["%.2f" % x for x in v], "µs/lookup %.2f" % (min(v) / LOOKUPS * 1e6))
print("ratio 0.3.0 / 0.2.0 (best of %d): %.3f" % (ROUNDS, min(times["0.3.0"]) / min(times["0.2.0"])))
for path in ("/tmp/lk_old.sqlite", "/tmp/lk_new.sqlite"):
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix): os.remove(path + suffix)
