#!/usr/bin/env python3
"""Reference throughput of pyattest 1.0.5 on a recorded App Attest case.

Verifies the recorded attestation at its recorded time (``verify_at_unix``;
every recorded leaf certificate has long expired) and the paired assertion,
checks that pyattest really accepts them and really rejects a one-byte change
of the client data, then times each kind of verification for ``--seconds``
seconds in this single process and prints:

    pyattest_attestation_per_second <float>
    pyattest_assertion_per_second <float>

How pyattest 1.0.5 is driven (read from its source):

* ``AppleConfig(key_id=<32 raw bytes>, app_id="TEAMID.bundle.id",
  production=<bool>, root_ca=<PEM bytes>)``.  ``production=False`` accepts
  both the ``appattestdevelop`` and the production aaguid.
* ``Attestation(raw=<CBOR bytes>, nonce=<clientData bytes>, config)`` and
  ``await attestation.verify()``.  pyattest hashes what it is given:
  clientDataHash = SHA256(nonce), expected = SHA256(authData || clientDataHash),
  compared with the leaf's 1.2.840.113635.100.8.2 extension.  So the *raw*
  client data (challenge) is passed, not its hash.
* The certificate chain is checked by pyhanko-certvalidator through a
  ``ValidationContext(extra_trust_roots=[root])`` that pyattest builds inside
  ``pyattest.verifiers.apple_attestation``; pyattest has no time parameter, so
  that module-level name is replaced by a partial adding ``moment=<recorded
  time>``.
* ``Assertion(raw=<CBOR bytes>, expected_hash=<clientDataHash, 32 bytes>,
  public_key=<cryptography EllipticCurvePublicKey>, config)`` and
  ``assertion.verify()`` (synchronous).  Here pyattest takes the hash itself:
  nonce = SHA256(authenticatorData || expected_hash), ECDSA-P256-SHA256 over
  nonce.  It checks only the signature (no rpIdHash, no counter).
"""

import argparse
import asyncio
import base64
import datetime as dt
import functools
import hashlib
import json
import os
import sys
import time

try:
    import pyattest.verifiers.apple_attestation as apple_attestation_module
    from cryptography.exceptions import InvalidSignature
    from cryptography.hazmat.primitives.serialization import load_pem_public_key
    from pyattest.assertion import Assertion
    from pyattest.attestation import Attestation
    from pyattest.configs.apple import AppleConfig
    from pyattest.exceptions import (
        InvalidCertificateChainException,
        InvalidNonceException,
        PyAttestException,
    )
except ImportError as exc:  # pragma: no cover - depends on the environment
    sys.exit(f"pyattest_bench: cannot import pyattest 1.0.5 and its dependencies: {exc}")

REPO_ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
DEFAULT_ROOT = os.path.join(
    REPO_ROOT, "fixtures", "appattest", "roots", "apple_app_attestation_root_ca.pem"
)
RECORDED = os.path.join(REPO_ROOT, "fixtures", "appattest", "recorded")


def die(message):
    print(f"pyattest_bench: FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def b64(value):
    return base64.b64decode(value)


def flip_one_byte(data):
    changed = bytearray(data)
    changed[len(changed) // 2] ^= 0x01
    return bytes(changed)


def load_case(path, kind):
    try:
        with open(path, encoding="utf-8") as handle:
            case = json.load(handle)
    except (OSError, ValueError) as exc:
        die(f"cannot read {path}: {exc}")
    if case.get("kind") != kind:
        die(f"{path}: kind is {case.get('kind')!r}, expected {kind!r}")
    if case.get("expected_result", "valid") != "valid":
        die(f"{path}: expected_result is {case.get('expected_result')!r}; need a valid case")
    return case


def pin_validation_time(moment):
    """Make pyattest's chain check run at ``moment`` instead of now."""
    original = apple_attestation_module.ValidationContext
    apple_attestation_module.ValidationContext = functools.partial(original, moment=moment)
    return original


async def verify_attestation(raw, client_data, config):
    attestation = Attestation(raw, client_data, config)
    await attestation.verify()
    return attestation


def verify_assertion(raw, client_data_hash, public_key, config):
    assertion = Assertion(raw, client_data_hash, public_key, config)
    assertion.verify()
    return assertion


async def time_attestations(raw, client_data, config, seconds):
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        await verify_attestation(raw, client_data, config)
        count += 1
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start)


def time_assertions(raw, client_data_hash, public_key, config, seconds):
    count = 0
    start = time.perf_counter()
    deadline = start + seconds
    while True:
        verify_assertion(raw, client_data_hash, public_key, config)
        count += 1
        now = time.perf_counter()
        if now >= deadline:
            return count / (now - start)


def sanity_checks(loop, moment, attestation, assertion):
    """Before any timing: pyattest refuses the recorded chain at the current time, accepts it at the
    recorded one, refuses a flipped byte of the client data; accepts the recorded assertion and refuses
    a flipped byte of its clientDataHash. Pins the validation time (die() on any surprise)."""
    att_raw, client_data, config = attestation
    asr_raw, asr_hash, public_key, asr_config = assertion
    # 1. Without the pinned time the recorded (expired) chain must be refused:
    #    proves that the time pin below is what makes it pass.
    try:
        loop.run_until_complete(verify_attestation(att_raw, client_data, config))
        die("pyattest accepted the recorded attestation at the current time (leaf should be expired)")
    except InvalidCertificateChainException:
        pass

    pin_validation_time(moment)

    # 2. Accepts the recorded attestation at the recorded time.
    try:
        verified = loop.run_until_complete(verify_attestation(att_raw, client_data, config))
    except PyAttestException as exc:
        die(f"pyattest rejected the recorded attestation at {moment.isoformat()}: {type(exc).__name__}: {exc!r}")
    if not verified.verified:
        die("pyattest did not mark the attestation verified")

    # 3. Rejects the same object when one byte of the client data (nonce input) changes.
    try:
        loop.run_until_complete(verify_attestation(att_raw, flip_one_byte(client_data), config))
        die("pyattest accepted the attestation with one byte of the client data flipped")
    except InvalidNonceException:
        pass
    except PyAttestException as exc:
        die(f"flipped client data rejected for the wrong reason: {type(exc).__name__}")

    # 4. Assertion: accepts the recorded one, rejects a one-byte change of clientDataHash.
    try:
        verify_assertion(asr_raw, asr_hash, public_key, asr_config)
    except (InvalidSignature, PyAttestException) as exc:
        die(f"pyattest rejected the recorded assertion: {type(exc).__name__}: {exc!r}")
    try:
        verify_assertion(asr_raw, flip_one_byte(asr_hash), public_key, asr_config)
        die("pyattest accepted the assertion with one byte of clientDataHash flipped")
    except InvalidSignature:
        pass


def parse_options():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--case",
        default=os.path.join(RECORDED, "veehaitch_ios-14.4_attestation.json"),
        help="recorded attestation fixture (JSON)",
    )
    parser.add_argument(
        "--assertion-case",
        default=None,
        help="recorded assertion fixture (JSON); default: the case's paired *_assertion.json",
    )
    parser.add_argument("--seconds", type=float, default=3.0, help="seconds to time each kind")
    parser.add_argument("--root", default=DEFAULT_ROOT, help="Apple App Attestation Root CA (PEM)")
    args = parser.parse_args()
    if args.seconds <= 0:
        die("--seconds must be positive")
    if args.assertion_case is None:
        if not args.case.endswith("_attestation.json"):
            die("--assertion-case is required when --case is not *_attestation.json")
        args.assertion_case = args.case[: -len("_attestation.json")] + "_assertion.json"
    return args


def main():
    args = parse_options()
    att = load_case(args.case, "attestation")
    asr = load_case(args.assertion_case, "assertion")
    with open(args.root, "rb") as handle:
        root_pem = handle.read()

    required = ("object_b64", "key_id_b64", "client_data_b64", "client_data_hash_b64", "app_id", "verify_at_unix")
    absent = [name for name in required if name not in att]
    if absent:
        die(
            f"{args.case} lacks {', '.join(absent)}; pyattest hashes the raw client data itself, so it can"
            " only verify cases that record it (the veehaitch_* cases do)"
        )
    absent = [name for name in ("object_b64", "key_id_b64", "client_data_hash_b64", "public_key_pem", "app_id") if name not in asr]
    if absent:
        die(f"{args.assertion_case} lacks {', '.join(absent)}")

    att_raw = b64(att["object_b64"])
    key_id = b64(att["key_id_b64"])
    client_data = b64(att["client_data_b64"])
    if hashlib.sha256(client_data).digest() != b64(att["client_data_hash_b64"]):
        die(f"{args.case}: SHA256(client_data) != client_data_hash; pyattest needs the raw client data")
    moment = dt.datetime.fromtimestamp(int(att["verify_at_unix"]), tz=dt.timezone.utc)
    production = att.get("environment", "development") == "production"
    config = AppleConfig(key_id=key_id, app_id=att["app_id"], production=production, root_ca=root_pem)

    asr_raw = b64(asr["object_b64"])
    asr_hash = b64(asr["client_data_hash_b64"])
    public_key = load_pem_public_key(asr["public_key_pem"].encode())
    asr_config = AppleConfig(key_id=b64(asr["key_id_b64"]), app_id=asr["app_id"], production=production, root_ca=root_pem)

    # --- Sanity checks, before any timing --------------------------------------------------
    loop = asyncio.new_event_loop()
    try:
        sanity_checks(loop, moment, (att_raw, client_data, config), (asr_raw, asr_hash, public_key, asr_config))

        # --- Timing ---------------------------------------------------------------------------
        att_rate = loop.run_until_complete(time_attestations(att_raw, client_data, config, args.seconds))
        asr_rate = time_assertions(asr_raw, asr_hash, public_key, asr_config, args.seconds)
    finally:
        loop.close()

    print(f"pyattest_attestation_per_second {att_rate:.1f}")
    print(f"pyattest_assertion_per_second {asr_rate:.1f}")


if __name__ == "__main__":
    main()
