"""The seed corpus of scripts/fuzz, one file each (named by its SHA-1) in OUT, so that every parser
the fuzz target reaches starts from valid inputs: every recorded attestation and assertion object,
every CBOR vector, every recorded receipt (inside the recorded attestations and in the veehaitch
YAML files) and each receipt's signed content (the DER payload), and a few request bodies (device,
admin, form), fields, headers (Authorization, Cookie, Content-Type) and paths.
Run from the repository's root: python3 scripts/lib/fuzz_corpus.py OUT
"""

import base64
import glob
import hashlib
import json
import os
import re
import sys

out = sys.argv[1]
seeds = set()


def put(data):
    if isinstance(data, str):
        data = data.encode()
    seeds.add(data)
    open(os.path.join(out, hashlib.sha1(data).hexdigest()), "wb").write(data)


def ber(data, at=0):
    """One BER element at data[at]: (tag byte, content start, content end, element end); an
    indefinite length runs to its end-of-contents octets."""
    tag, at = data[at], at + 1
    first, at = data[at], at + 1
    if first == 0x80:
        start = end = at
        while data[end : end + 2] != b"\0\0":
            end = ber(data, end)[3]
        return tag, start, end, end + 2
    if first & 0x80:
        count = first & 0x7F
        length, at = int.from_bytes(data[at : at + count], "big"), at + count
    else:
        length = first
    return tag, at, at + length, at + length


def children(data, element):
    """The elements inside a constructed element."""
    _, at, end, _ = element
    found = []
    while at < end:
        found.append(ber(data, at))
        at = found[-1][3]
    return found


def octets(data, element):
    """An OCTET STRING's bytes, its chunks joined when it is constructed (BER)."""
    tag, start, end, _ = element
    if tag == 0x04:
        return data[start:end]
    return b"".join(octets(data, chunk) for chunk in children(data, element))


def receipt_content(receipt):
    """The signed content of a CMS SignedData receipt: ContentInfo [0] SignedData, its third member
    (encapContentInfo), whose [0] holds the content."""
    signed_data = children(receipt, children(receipt, ber(receipt))[1])[0]
    encapsulated = children(receipt, signed_data)[2]
    return octets(receipt, children(receipt, children(receipt, encapsulated)[1])[0])


def embedded_receipt(attestation):
    """attStmt.receipt of an attestation object: the byte string after the text key "receipt"."""
    at = attestation.find(b"\x67receipt")
    if at < 0:
        return None
    at += 8
    kind, info = attestation[at] >> 5, attestation[at] & 0x1F
    if kind != 2 or info < 24 or info > 26:
        return None
    count = 1 << (info - 24)
    length = int.from_bytes(attestation[at + 1 : at + 1 + count], "big")
    return attestation[at + 1 + count : at + 1 + count + length]


receipts, cases = [], []
for path in sorted(glob.glob("fixtures/appattest/recorded/*.json")):
    case = json.load(open(path))
    cases.append(case)
    if case.get("object_b64"):
        put(base64.b64decode(case["object_b64"]))
        if case.get("kind") == "attestation":
            receipts.append(embedded_receipt(base64.b64decode(case["object_b64"])))
for path in sorted(glob.glob("fixtures/appattest/veehaitch-yaml/*.yaml")):
    receipts += [base64.b64decode(text) for text in re.findall(r"^receiptBase64: (\S+)", open(path).read(), re.M)]
for receipt in receipts:
    if receipt:
        put(receipt)
        put(receipt_content(receipt))
for vector in json.load(open("fixtures/cbor/appendix_a.json")):
    put(bytes.fromhex(vector["hex"]))
for item in json.load(open("fixtures/cbor/cbor_not_well_formed.json"))["not_well_formed"]:
    put(bytes.fromhex(item["hex"]))

# Request bodies and fields, as a device and a gateway send them (docs/API.md).
client_id = "clid_" + "0123456789abcdef" * 2
challenge = base64.urlsafe_b64encode(bytes(range(32))).decode().rstrip("=")
attestation = next(c for c in cases if c["id"] == "veehaitch_ios-14.4_attestation")
assertion = next(c for c in cases if c["id"] == "veehaitch_ios-14.4_assertion")
key_id = attestation["key_id_b64"]
bodies = [
    {"client_id": client_id},
    {"client_id": client_id, "key_id": key_id, "attestation": attestation["object_b64"], "challenge": challenge},
    {"client_id": client_id, "key_id": key_id, "assertion": assertion["object_b64"], "challenge": assertion["challenge_b64"]},
]
for body in bodies:
    put(json.dumps(body))
put('{ "client_id" : "clid_\\u0030\\/\\"\\\\\\b\\f\\n\\r\\t\\ud83d\\ude00" }\r\n')
put("{}")
put(
    '{"name": "Messages", "team_id": "ABCDE12345", "bundle_ids": ["com.example.a", "com.example.b"], "environment": "both",'
    ' "require_valid_receipt": true, "max_risk_metric": 5, "max_new_keys_per_hour": -1, "max_live_tokens_per_device": null}'
)
for text in [client_id, key_id, challenge, assertion["challenge_b64"], attestation["object_b64"][:64]]:
    put(text)
put("token=abc.def-ghi&x=a%2Bb+c%C3%A9")
put("Bearer abc.def_ghi-jkl\nbearer second")
put("attestd_session=abc; theme=dark")
put("application/json; charset=utf-8")
put("/admin/v1/integrations/%s/revoke?x=1" % client_id)
put("/console/static/app.js")
print("seed corpus: %d inputs" % len(seeds), file=sys.stderr)
