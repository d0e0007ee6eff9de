"""The seed corpus of scripts/fuzz: every recorded attestation object and every CBOR vector, one file
each (named by its SHA-1) in OUT. Run from the repository's root: python3 scripts/fuzz_corpus.py OUT
"""

import base64
import glob
import hashlib
import json
import os
import sys

out = sys.argv[1]


def put(data):
    open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb").write(data)


for path in glob.glob("fixtures/appattest/recorded/*.json"):
    case = json.load(open(path))
    if case.get("object_b64"):
        put(base64.b64decode(case["object_b64"]))
for vector in json.load(open("fixtures/cbor/appendix_a.json")):
    put(bytes.fromhex(vector["hex"]))
for item in json.load(open("fixtures/cbor/cbor_not_well_formed.json"))["not_well_formed"]:
    put(bytes.fromhex(item["hex"]))
