"""The reliability checks of `scripts/check reliability`, by area (__main__.py is the entry):

  options.py      the command line (--quick, --only, --cycles, --soak-seconds, --seed, --keep)
  run.py          Run: the parts in order, each on its own attestd, one Tally; cleanup; main()
  wire.py         part 1: malformed input over the wire; cases in wire_transport.py (A), wire_payload.py (B, C)
  slow.py         part 2: slowhttptest while /healthz is measured; connections.py: the per-address cap
  crash.py        part 3: kill -9 cycles through a recording proxy; crashcheck.py: the checks after each restart
  busy.py         part 4: the sqlite3 CLI holds the write lock
  soak.py         part 5: simulated devices for a bounded time, RSS and descriptors sampled
  rawhttp.py      HTTP on raw sockets, /healthz latency
  tools.py        the sqlite3 CLI, /proc, attestctl simulate's reports

python3 standard library, plus scripts/lib/attestd_testlib.py (on sys.path: __main__.py puts scripts/lib/ there).
"""
