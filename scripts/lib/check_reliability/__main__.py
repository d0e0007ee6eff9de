"""Reliability checks of a real attestd over loopback; run by `scripts/check reliability` (which installs what
is needed and locates the binaries) as `python3 scripts/lib/check_reliability ARGS`. docs/RELIABILITY.md has the measured figures.

  1. wire:  malformed input over the wire (BAD_INPUTS sections A, B, C): the documented answer, nothing stored;
  2. slow:  slow clients (slowhttptest -H and -B) while GET /healthz p99 is measured, and the per-address cap;
  3. crash: kill -9 during a mixed load, N cycles (J S1, I R6): integrity, acknowledged tokens, challenges,
            revocations (a recording HTTP/1.1 pass-through sits between the simulated devices and attestd);
  4. busy:  a busy database (J S2, S3): the sqlite3 CLI holds the write lock longer / shorter than --busy-timeout-ms;
  5. soak:  simulated devices for a bounded time, RSS and open descriptors sampled.

The checks are the modules of this package, scripts/lib/check_reliability/: options.py (the command line), run.py (the
parts in order, one tally), one module per part (wire.py with wire_transport.py and wire_payload.py;
slow.py with connections.py; crash.py with crashcheck.py; busy.py; soak.py), and what they share
(rawhttp.py, tools.py, and scripts/lib/attestd_testlib.py).

python3 standard library only. 127.0.0.1 only; every loop is bounded in count and time; every socket has a
timeout; every process started is killed on exit. Prints PASS/FAIL lines and "N passed, N failed"; exits 1
when anything failed, 64 on a bad command line.
"""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
# Run as a directory, the package's own folder is sys.path[0]: scripts/lib/ takes its place, so that
# the package and attestd_testlib import by their names.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from check_reliability.run import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
