"""Prints the fields of a recorded device (fixtures/appattest/recorded/*_attestation.json) that a check
replays, on one line separated by spaces, for the bash scripts:

    read -r TEAM_ID BUNDLE_ID KEY_ID RECORDED_AT CLIENT_DATA OBJECT < <(python3 scripts/lib/recorded_device.py FIXTURE)

team ID, bundle ID, key ID (standard base64), the time it verifies at (Unix seconds), its client data
in base64url without padding (the challenge it was made for) and the attestation object (standard base64).
"""

import json
import sys

with open(sys.argv[1]) as f:
    a = json.load(f)
client_data = a["client_data_b64"].rstrip("=").replace("+", "-").replace("/", "_")
print(a["team_id"], a["bundle_id"], a["key_id_b64"], a["verify_at_unix"], client_data, a["object_b64"])
