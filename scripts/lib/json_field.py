"""Prints one field of the JSON object on stdin, for the bash scripts:

    ID=$(attestctl integration create ... --json | python3 scripts/lib/json_field.py client_id)

A missing or null field, or input that is not a JSON object, prints an empty line and exits 1
(append `|| true` where an empty value is an answer, not an error).
"""

import json
import sys

try:
    value = json.load(sys.stdin).get(sys.argv[1])
except Exception:
    value = None
print("" if value is None else value)
sys.exit(0 if value is not None else 1)
