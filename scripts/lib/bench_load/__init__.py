"""The load benchmark behind scripts/bench-load (which builds the release binaries, installs nginx,
wrk and sqlite3, and starts a throwaway PostgreSQL cluster: PG_URL, PG_BIN, PG_DIR, PG_PORT).

Every figure is printed beside references measured in the same run:
  - nginx serving a static `return 200` (the HTTP ceiling of this machine), with wrk, and
    attestd's own HTTP server answering 200 with nothing behind it (`attest-bench --hello`, the
    second ceiling: libmicrohttpd and its wrapper);
  - the gateway check in interleaved rounds (--rounds, default 5): nginx, hello, authorize and
    introspect one after the other, per store (SQLite, PostgreSQL one node); the median ratio and
    its spread decide, then authorize's p99 at about half its maximum rate, and the four
    revocations under load (`attestctl integration revoke`, `token revoke`, `device block` and
    `integration suspend`, each while wrk checks its token; after it returned, 50 checks on new
    connections and one second of wrk on keep-alive ones must all be 401), on one node, and on
    PostgreSQL on two nodes too (load and checks on both);
  - each store's own single-transaction commit rate (a loop of one-row INSERT + COMMIT on the
    same file system or cluster, same durability), beside refresh/s, and how many commits shared
    one flush (SQLite: attestd's group commit; PostgreSQL: pg_stat_wal's flushes);
  - for each store: SQLite (one node), PostgreSQL (one node), PostgreSQL (two nodes on the same
    database, the load spread over both): GET /v1/authorize and POST /v1/introspect (wrk, 64
    connections), POST /v1/challenge, refresh (challenge + assertion + token) and attest (prepared
    objects) with attest-load;
  - the same on tables of 10,000,000 live tokens and 1,000,000 devices (--large-tokens,
    --large-devices), per store, with what an operator waits for at that size (start, a /metrics
    scrape, attestctl commands), the purge of 100,000 tokens expiring at once in them (30 s of
    load during it, then 30 s of the same load with nothing to purge, the reference), and the
    peak RSS (target <= 64 MiB), in alternating rounds of small and large tables (--scale-rounds,
    default 3; the median ratio decides); --only-scale runs this part alone;
  - SQLite with one HTTP thread pinned to core 0 against the in-process verifier on core 0, in
    alternating rounds (--attest-rounds, default 3: attest over HTTP, then the verifier; the
    median ratio decides); --only-attest runs this part alone; with attestd's CPU time per attest
    (sampled from /proc over the measured window) beside the verifier's time per attestation;
  - paired rounds (--pairs, default 3): SQLite then PostgreSQL, one node each, authorize and refresh,
    one right after the other; the median of the rounds' ratios is what the PostgreSQL targets
    are judged on (a single pass moves by 15 % or more from run to run here); --only-refresh runs
    them alone, after each store's commit rate; with attestd's CPU time per refresh on each store
    beside the refresh use case in process on one core (`attest-bench --service`);
  - --only-stall: the gateway check beside a busy disk: authorize of one live token (answered from
    memory) beside challenges on one node, while dd writes --stall-mb MiB (default 6,000) buffered
    to the same disk and flushes them, then the same load without it (the reference), per store:
    no check should wait behind another request's statement (target: no stall over 50 ms).
Targets (issue figures): authorize and introspect >= 0.5 x nginx (median of the rounds, both
stores); refresh/s >= 2 x the store's commit rate; refresh on PostgreSQL >= SQLite's; authorize on
PostgreSQL >= 0.5 x SQLite's; attest >= 0.8 x the in-process verifier for the same threads.

The modules: cli.py (the command line, one function per --only-* part), everything.py (the whole
run), tools.py (wrk, attest-load, the stores' own commit rates), database.py (PostgreSQL resets, the
large tables and the expiring tokens), bench.py (Bench: attestd nodes and the measurements, with
gateway.py's gateway check and revocations and purge.py's purge and busy-disk runs), report.py
(the lines printed). Run as `python3 scripts/lib/bench_load --bin DIR [options]` (--help).
"""
