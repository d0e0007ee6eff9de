"""The databases a run measures on: PostgreSQL's reset between measurements, the large tables, the
100,000 tokens that expire at once. SQL through the sqlite3 shell and scripts/lib/postgres.sh's
attestd_psql_admin."""

import subprocess

from .tools import DEVICE_COLUMNS, ROOT, TOKEN_COLUMNS, count_label

ADMIN = ". scripts/lib/deps.sh; . scripts/lib/postgres.sh; "


def reset_pg():
    subprocess.run(["bash", "-c", ADMIN + 'attestd_psql_admin postgres "DROP DATABASE IF EXISTS attestd WITH (FORCE)" '
                    '"CREATE DATABASE attestd OWNER attestd"'], cwd=ROOT, check=True, timeout=120, stdout=subprocess.DEVNULL)


def reset_pg_small():
    subprocess.run(["bash", "-c", ADMIN + 'attestd_psql_admin postgres "DROP DATABASE IF EXISTS attestd_small WITH (FORCE)" '
                    '"CREATE DATABASE attestd_small OWNER attestd"'], cwd=ROOT, check=True, timeout=120, stdout=subprocess.DEVNULL)


def large_label(options):
    """'10M tokens/1M devices' for the sizes of the large tables."""
    return "%s tokens/%s devices" % (count_label(options.large_tokens), count_label(options.large_devices))


def large_sizes(options):
    return {"dc": DEVICE_COLUMNS, "tc": TOKEN_COLUMNS, "d": options.large_devices, "t": options.large_tokens}


def populate_pg(sizes):
    """A function of a client ID that loads the large tables into PostgreSQL's attestd database."""
    def populate(client_id):
        sql = ("INSERT INTO devices (%(dc)s) SELECT sha256(int8send(i)), '%(c)s', "
               "'\\x04'::bytea || sha256(int8send(i)) || sha256(int8send(-i)), 0, 'production', ''::bytea, 'active', 0, 0 "
               "FROM generate_series(1, %(d)d) i; "
               "INSERT INTO tokens (%(tc)s) SELECT sha256(int8send(i) || '\\x74'::bytea), '%(c)s', 'ws_bench', "
               "sha256(int8send(i %% %(d)d + 1)), 'messages', extract(epoch from now())::bigint, extract(epoch from now())::bigint + 3600 "
               "FROM generate_series(1, %(t)d) i;" % dict(sizes, c=client_id))
        # Vacuumed and checkpointed, as tables are in a steady state: otherwise autovacuum and the
        # checkpointer work through the bulk load during the measurement (one run measured
        # authorize at half the small tables' rate for that reason alone).
        subprocess.run(["bash", "-c", ADMIN + 'attestd_psql_admin attestd "$0" "VACUUM ANALYZE" "CHECKPOINT"', sql], cwd=ROOT, check=True,
                       timeout=3600, stdout=subprocess.DEVNULL)
    return populate


def populate_sqlite(path, sizes):
    """A function of a client ID that loads the large tables into the SQLite file `path`."""
    def populate(client_id):
        # 4,000-byte receipts, as Apple's are (a million devices: a file of about 8 GB). Loaded
        # without the write-ahead log and with a large cache (attestd turns WAL back on at start).
        sql = ("PRAGMA journal_mode=DELETE; PRAGMA synchronous=OFF; PRAGMA cache_size=-4000000; "
               "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %(d)d) "
               "INSERT INTO devices (%(dc)s) SELECT randomblob(32), '%(c)s', randomblob(65), 0, 'production', "
               "randomblob(4000), 'active', 0, 0 FROM n; "
               "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < %(t)d) "
               "INSERT INTO tokens (%(tc)s) SELECT randomblob(32), '%(c)s', 'ws_bench', randomblob(32), 'messages', "
               "unixepoch(), unixepoch() + 3600 FROM n; ANALYZE; PRAGMA journal_mode=WAL;" % dict(sizes, c=client_id))
        subprocess.run(["sqlite3", path, sql], check=True, timeout=3600, stdout=subprocess.DEVNULL)
    return populate


def expiring_sqlite(path):
    """A function of (client ID, expiry) that inserts 100,000 tokens expiring then into the SQLite file `path`."""
    def insert(client_id, expires_at):
        sql = ("INSERT INTO devices (%(dc)s) VALUES (randomblob(32), '%(c)s', randomblob(65), 0, 'production', x'', 'active', 0, 0); "
               "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000) "
               "INSERT INTO tokens (%(tc)s) SELECT randomblob(32), '%(c)s', 'ws_bench', "
               "(SELECT key_id FROM devices WHERE client_id = '%(c)s' AND receipt = x'' LIMIT 1), 'messages', %(e)d - 3600, %(e)d "
               "FROM n;" % {"c": client_id, "e": expires_at, "dc": DEVICE_COLUMNS, "tc": TOKEN_COLUMNS})
        subprocess.run(["sqlite3", path, sql], check=True, timeout=600)
    return insert


def expiring_pg(client_id, expires_at):
    """100,000 tokens expiring at `expires_at` inserted into PostgreSQL's attestd database."""
    # The device's key and the tokens' hashes are derived from the integration's client ID:
    # the purge and its reference insert a set each, into one database.
    sql = ("INSERT INTO devices (%(dc)s) VALUES (sha256(convert_to('purge %(c)s', 'UTF8')), '%(c)s', "
           "'\\x04'::bytea || sha256('a'::bytea) || sha256('b'::bytea), 0, 'production', ''::bytea, 'active', 0, 0); "
           "INSERT INTO tokens (%(tc)s) SELECT sha256(int8send(i) || convert_to('%(c)s', 'UTF8')), '%(c)s', 'ws_bench', "
           "sha256(convert_to('purge %(c)s', 'UTF8')), 'messages', %(e)d - 3600, %(e)d FROM generate_series(1, 100000) i;"
           % {"c": client_id, "e": expires_at, "dc": DEVICE_COLUMNS, "tc": TOKEN_COLUMNS})
    subprocess.run(["bash", "-c", ADMIN + 'attestd_psql_admin attestd "$0"', sql], cwd=ROOT, check=True, timeout=600,
                   stdout=subprocess.DEVNULL)
