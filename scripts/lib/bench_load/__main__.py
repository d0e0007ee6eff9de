"""`python3 scripts/lib/bench_load --bin DIR [options]`: the load benchmark (this package's __init__.py
says what it measures; scripts/bench-load prepares the machine and runs it)."""

import os
import sys

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
# Run as a directory, the package's own folder is sys.path[0]: scripts/lib/ takes its place, so that
# the package and attestd_testlib import by their names.
sys.path[0] = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
from bench_load.cli import main  # noqa: E402

if __name__ == "__main__":
    main()
