"""Prints a TCP port free on 127.0.0.1 now, for the bash scripts: PORT=$(python3 scripts/lib/free_port.py)."""

import os
import sys

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from attestd_testlib import free_port  # noqa: E402

print(free_port())
