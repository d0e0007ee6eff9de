"""Checks docs/openapi.yaml against a live attestd; run by scripts/check openapi (which installs what is
needed, makes the virtualenv with schemathesis and locates the binaries), with that virtualenv's python.

  A. a recorded device (fixtures/appattest/recorded/veehaitch_ios-14.4_*) replayed through
     attestd --insecure-test-mode: attest, re-attest (409), refresh, authorize, introspect, a
     revoked integration (403), missing/bad credentials (401), wrong media type (415), each
     response checked against the spec with schemathesis' checks. It also yields a real access
     token, valid for an hour of real time, that phase B uses;
  B. schemathesis fuzzing a production-mode attestd (no test mode) on the same database, with the
     gateway secret as the credential of /v1/introspect, the real token for /v1/authorize, and the
     real client and key IDs mixed into the generated bodies. It runs longer than attestd's
     one-minute purge timer on purpose.

Checks: not_a_server_error, status_code_conformance, content_type_conformance,
response_headers_conformance, response_schema_conformance (and, in phase B, unsupported_method
and allow_header_conformance: other methods get 405 with Allow). The server must never answer 5xx.

The admin API (tag `admin`) is checked on attestd's admin listener: in phase A with an owner and a
user admin key (every operation, 401, 403 forbidden_role, another workspace's integration 404), and in
phase B by a second schemathesis run with the owner key, CHECK_OPENAPI_ADMIN_MAX_TIME seconds (default 30).

Usage: check_openapi.py --bin DIR --work DIR --started EPOCH_SECONDS. Knobs (environment):
CHECK_OPENAPI_MAX_TIME (seconds of fuzzing, default 75), CHECK_OPENAPI_MAX_EXAMPLES (per operation and
round, default 25), CHECK_OPENAPI_SEED. Prints "check-openapi: PASS (...)" or "check-openapi: FAIL (N
problems)" last; exits 1 on any problem.
"""

import argparse
import base64
import collections
import importlib.metadata
import json
import os
import re
import signal
import subprocess
import sys
import time
import traceback

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # scripts/lib/
from attestd_testlib import Attestd, Tally, create_integration, exit_status  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SPEC = os.path.join(ROOT, "docs", "openapi.yaml")
FIXTURES = os.path.join(ROOT, "fixtures", "appattest", "recorded")
ST_CHECKS = ("not_a_server_error,status_code_conformance,content_type_conformance,response_headers_conformance,"
             "response_schema_conformance,unsupported_method,allow_header_conformance")


# ---------------------------------------------------------------------------------------------
# Phase A: replays a recorded device and checks every answer against the spec.


class SpecCheck:
    """Sends one request and runs the spec's checks for its operation on the answer; counts failures."""

    def __init__(self, base):
        import schemathesis
        from schemathesis.checks import not_a_server_error
        from schemathesis.specs.openapi.checks import (
            content_type_conformance,
            response_headers_conformance,
            response_schema_conformance,
            status_code_conformance,
        )
        self.schema = schemathesis.openapi.from_path(SPEC)
        self.base = base
        self.failed = 0
        self.checks = [not_a_server_error, status_code_conformance, content_type_conformance, response_headers_conformance,
                       response_schema_conformance]

    def __call__(self, name, path, method, expected, headers=None, json_body=None, data=None, operation=None):
        import requests
        from schemathesis.core.failures import FailureGroup
        template = operation or path
        names = re.findall(r"\{(\w+)\}", template)
        values = re.match("^" + re.sub(r"\\\{\w+\\\}", "([^/]+)", re.escape(template)) + "$", path).groups() if names else ()
        case = self.schema[template][method].Case(path_parameters=dict(zip(names, values)))
        response = requests.request(method, self.base + path, headers=headers, json=json_body, data=data, timeout=5)
        problems = []
        if response.status_code != expected:
            problems.append(f"status {response.status_code}, expected {expected}")
        try:
            case.validate_response(response, checks=self.checks)
        except FailureGroup as error:  # one group that lists every failed check
            problems.extend(str(failure).strip() for failure in error.exceptions)
        if problems:
            self.failed += 1
            request = response.request
            print(f"FAIL {name}: {method} {path} -> {response.status_code} {response.headers.get('Content-Type')}", flush=True)
            print(f"     request headers: {dict(request.headers)}", flush=True)
            print(f"     request body: {(request.body or b'')[:300]!r}", flush=True)
            print(f"     response headers: {dict(response.headers)}", flush=True)
            print(f"     response body: {response.text[:500]!r}", flush=True)
            for problem in problems:
                print("     " + problem.replace("\n", "\n     "), flush=True)
        else:
            print(f"ok   {name}: {method} {path} -> {response.status_code}", flush=True)
        return response


def recorded_flow(base, client_id, revoked_id, secret):
    """Returns (failed answers, the access token of the refresh or "")."""
    import requests

    check = SpecCheck(base)
    with open(os.path.join(FIXTURES, "veehaitch_ios-14.4_attestation.json")) as f:
        attestation = json.load(f)
    with open(os.path.join(FIXTURES, "veehaitch_ios-14.4_assertion.json")) as f:
        assertion = json.load(f)
    client_data = attestation["client_data_b64"].rstrip("=").replace("+", "-").replace("/", "_")

    def test_post(path, body):
        response = requests.post(base + path, json=body, timeout=5)
        if response.status_code != 200:
            raise SystemExit(f"{path} {body} -> {response.status_code} {response.text}")

    JSON = {"Content-Type": "application/json"}
    FORM = {"Content-Type": "application/x-www-form-urlencoded"}
    attest_body = {"client_id": client_id, "key_id": attestation["key_id_b64"],
                   "attestation": attestation["object_b64"], "challenge": client_data}
    token_body = {"client_id": client_id, "key_id": assertion["key_id_b64"],
                  "assertion": assertion["object_b64"], "challenge": client_data}

    check("healthz", "/healthz", "GET", 200)
    check("metrics", "/metrics", "GET", 200)
    check("challenge", "/v1/challenge", "POST", 200, json_body={"client_id": client_id})
    check("challenge, revoked integration", "/v1/challenge", "POST", 403, json_body={"client_id": revoked_id})
    check("challenge, unknown integration", "/v1/challenge", "POST", 404,
          json_body={"client_id": "clid_" + "0" * 32})
    check("challenge, duplicate key", "/v1/challenge", "POST", 400,
          data='{"client_id":"a","client_id":"b"}', headers=JSON)
    check("challenge, body over 64 KiB", "/v1/challenge", "POST", 413, data=b"{" + b" " * 70000 + b"}", headers=JSON)
    check("challenge, text/plain", "/v1/challenge", "POST", 415,
          data="client_id", headers={"Content-Type": "text/plain"})

    # The attestation verifies at the recorded time only (its leaf certificate expired in 2021).
    test_post("/test/clock", {"now": str(attestation["verify_at_unix"])})
    test_post("/test/challenge", {"client_id": client_id, "challenge": client_data})
    check("attest, recorded device", "/v1/attest", "POST", 200, json_body=attest_body)
    check("attest, challenge used", "/v1/attest", "POST", 401, json_body=attest_body)
    test_post("/test/challenge", {"client_id": client_id, "challenge": client_data})
    check("attest, same key again", "/v1/attest", "POST", 409, json_body=attest_body)

    # Refresh at the real time: assertions carry no certificate, so the token is good for an hour.
    test_post("/test/clock", {"now": str(int(time.time()))})
    test_post("/test/challenge", {"client_id": client_id, "challenge": client_data})
    refreshed = check("token, recorded assertion", "/v1/token", "POST", 200, json_body=token_body)
    test_post("/test/challenge", {"client_id": client_id, "challenge": client_data})
    check("token, counter replayed", "/v1/token", "POST", 401, json_body=token_body)
    token = refreshed.json().get("access_token", "") if refreshed.status_code == 200 else ""

    check("authorize, valid token", "/v1/authorize", "GET", 200, headers={"Authorization": f"Bearer {token}"})
    check("authorize, unknown token", "/v1/authorize", "GET", 401,
          headers={"Authorization": "Bearer atk_" + "A" * 43})
    check("authorize, no token", "/v1/authorize", "GET", 401)
    auth = {"Authorization": f"Bearer {secret}", **FORM}
    check("introspect, active", "/v1/introspect", "POST", 200, data={"token": token}, headers=auth)
    check("introspect, inactive", "/v1/introspect", "POST", 200, data={"token": "atk_nope"}, headers=auth)
    check("introspect, no token field", "/v1/introspect", "POST", 400, data={"x": "y"}, headers=auth)
    check("introspect, wrong secret", "/v1/introspect", "POST", 401, data={"token": token},
          headers={"Authorization": "Bearer not-the-secret", **FORM})
    check("introspect, JSON body", "/v1/introspect", "POST", 415, json_body={"token": token},
          headers={"Authorization": f"Bearer {secret}"})

    print(f"recorded flow: {check.failed} failed", flush=True)
    return check.failed, token


def admin_flow(base, client_id, foreign_id, owner_key, user_key):
    """The admin API on the admin listener, each answer checked against the spec (after the recorded
    flow, so that `client_id` has a device). Returns the failed answers."""
    check = SpecCheck(base)
    owner = {"Authorization": f"Bearer {owner_key}"}
    user = {"Authorization": f"Bearer {user_key}"}
    integration = "/admin/v1/integrations/{client_id}"
    check("admin: me", "/admin/v1/me", "GET", 200, headers=owner)
    check("admin: no key", "/admin/v1/integrations", "GET", 401)
    check("admin: unknown key", "/admin/v1/integrations", "GET", 401, headers={"Authorization": "Bearer adm_" + "A" * 43})
    check("admin: list", "/admin/v1/integrations", "GET", 200, headers=owner)
    created = check("admin: create", "/admin/v1/integrations", "POST", 201, headers=owner,
                    json_body={"name": "check-openapi admin", "team_id": "ABCDE12345", "bundle_ids": ["com.example.a"],
                               "environment": "both", "max_live_tokens_per_device": 3})
    fresh = created.json().get("client_id", "clid_missing") if created.status_code == 201 else "clid_missing"
    check("admin: create, bad Team ID", "/admin/v1/integrations", "POST", 400, headers=owner,
          json_body={"name": "x", "team_id": "abc", "bundle_ids": ["com.example.a"]})
    check("admin: create, duplicate key", "/admin/v1/integrations", "POST", 400, headers={**owner, "Content-Type": "application/json"},
          data='{"name":"a","name":"b"}')
    check("admin: create, text/plain", "/admin/v1/integrations", "POST", 415, headers={**owner, "Content-Type": "text/plain"}, data="x")
    check("admin: create, user role", "/admin/v1/integrations", "POST", 403, headers=user,
          json_body={"name": "x", "team_id": "ABCDE12345", "bundle_ids": ["com.example.a"]})
    check("admin: show", f"/admin/v1/integrations/{client_id}", "GET", 200, headers=owner, operation=integration)
    check("admin: show, another workspace's", f"/admin/v1/integrations/{foreign_id}", "GET", 404, headers=owner, operation=integration)
    check("admin: devices", f"/admin/v1/integrations/{client_id}/devices", "GET", 200, headers=user,
          operation=integration + "/devices")
    check("admin: policy", f"/admin/v1/integrations/{fresh}/policy", "POST", 200, headers=owner,
          json_body={"max_risk_metric": 10, "max_new_keys_per_hour": None}, operation=integration + "/policy")
    check("admin: suspend", f"/admin/v1/integrations/{fresh}/suspend", "POST", 200, headers=owner, operation=integration + "/suspend")
    check("admin: resume", f"/admin/v1/integrations/{fresh}/resume", "POST", 200, headers=owner, operation=integration + "/resume")
    check("admin: revoke without confirm", f"/admin/v1/integrations/{fresh}/revoke", "POST", 400, headers=owner, json_body={},
          operation=integration + "/revoke")
    check("admin: revoke", f"/admin/v1/integrations/{fresh}/revoke", "POST", 200, headers=owner, json_body={"confirm": fresh},
          operation=integration + "/revoke")
    check("admin: suspend, revoked", f"/admin/v1/integrations/{fresh}/suspend", "POST", 403, headers=owner,
          operation=integration + "/suspend")
    check("admin: block, malformed key ID", "/admin/v1/devices/xyz/block", "POST", 400, headers=owner, operation="/admin/v1/devices/{key_id}/block")
    check("admin: block, unknown device", "/admin/v1/devices/" + "ab" * 32 + "/block", "POST", 404, headers=owner,
          operation="/admin/v1/devices/{key_id}/block")
    check("admin: revoke an unknown token", "/admin/v1/tokens/revoke", "POST", 404, headers=owner, json_body={"token": "atk_nope"})
    check("admin: audit", "/admin/v1/audit", "GET", 200, headers=user)
    check("admin: keys, user role", "/admin/v1/keys", "GET", 403, headers=user)
    check("admin: keys", "/admin/v1/keys", "GET", 200, headers=owner)
    made = check("admin: create key", "/admin/v1/keys", "POST", 201, headers=owner, json_body={"name": "ci", "role": "developer"})
    key_id = made.json().get("id", "admk_missing") if made.status_code == 201 else "admk_missing"
    check("admin: revoke key", f"/admin/v1/keys/{key_id}/revoke", "POST", 200, headers=owner, operation="/admin/v1/keys/{key_id}/revoke")
    check("admin: revoke unknown key", "/admin/v1/keys/admk_0000000000000000/revoke", "POST", 404, headers=owner,
          operation="/admin/v1/keys/{key_id}/revoke")
    print(f"admin flow: {check.failed} failed", flush=True)
    return check.failed


# ---------------------------------------------------------------------------------------------
# Phase B: schemathesis against a production-mode attestd.


def schemathesis_config(client_id, revoked_id, key_id, token):
    lines = ['[auth.openapi.gatewaySecret]', 'bearer = "${CHECK_OPENAPI_GATEWAY_SECRET}"',
             '[auth.openapi.adminKey]', 'bearer = "${CHECK_OPENAPI_ADMIN_KEY}"']
    if token:
        lines += ['[auth.openapi.accessToken]', 'bearer = "${CHECK_OPENAPI_ACCESS_TOKEN}"']
    lines += ['[dictionaries.client_ids]', f'values = ["{client_id}", "{revoked_id}"]',
              '[dictionaries.key_ids]', f'values = ["{key_id}"]',
              '[parameters]',
              '"body.client_id" = { dictionary = "client_ids", probability = 0.5 }',
              '"body.key_id" = { dictionary = "key_ids", probability = 0.3 }']
    if token:
        lines += ['[dictionaries.tokens]', f'values = ["{token}"]',
                  '[parameters."body.token"]', 'dictionary = "tokens"', 'probability = 0.5']
    return "\n".join(lines) + "\n"


# ---------------------------------------------------------------------------------------------


def server_log_excerpt(path):
    """The server's log lines that are not request lines (start, errors), and of a crash backtrace the
    crashed thread's frames; at most 40 lines, on stderr."""
    out, frames = [], 0
    with open(path, errors="replace") as f:
        for line in f:
            line = line.rstrip("\n")
            if '"msg":"request"' in line:
                continue
            if line.startswith("{") or "Program crashed" in line:
                out.append(line)
            elif line.endswith(" crashed:"):
                out.append(line)
                frames = 12
            elif frames > 0:
                out.append(line)
                frames -= 1
    for line in out[:40]:
        print(line, file=sys.stderr)


class Server:
    """The attestd of a phase: started from the check's binary; stopped with SIGTERM, expecting exit 0
    (anything else is one of the problems)."""

    def __init__(self, attestd, problems):
        self.attestd, self.problems, self.current = attestd, problems, None

    def start(self, log, *args):
        self.current = Attestd(self.attestd, log, list(args), start_seconds=10)
        if not self.current.started():
            if self.current.running():
                print("attestd did not log its port within 10 s", file=sys.stderr)
                self.current.stop()
            else:
                print("attestd exited before listening:", file=sys.stderr)
                sys.stderr.write(self.current.log_text())
            self.current = None
            raise SystemExit(1)
        return self.current

    def stop(self, log):
        """SIGTERM, expect exit 0."""
        if not self.current.running():
            self.problems.fail("attestd was no longer running before SIGTERM (exit status %s); its log:" % self.current.stop())
            server_log_excerpt(log)
        else:
            status = self.current.stop(drain_seconds=30)
            if status != 0:
                self.problems.fail("attestd exited %s on SIGTERM (expected 0); its log:" % status)
                server_log_excerpt(log)
        self.current = None

    def cleanup(self):
        if self.current is not None and self.current.running():
            self.current.stop(drain_seconds=30)


def gateway_secret(work):
    """A fresh gateway secret in a file of mode 0600: (its path, the secret)."""
    secret_file = os.path.join(work, "gateway-secret")
    with open(secret_file, "w") as f:
        f.write(base64.b64encode(os.urandom(32)).decode().rstrip("="))
    os.chmod(secret_file, 0o600)
    with open(secret_file) as f:
        return secret_file, f.read().strip()


def provision(attestctl, db, work, team_id, bundle_id):
    """The recorded device's integration, a revoked one, an owner's and a user's admin key:
    (client ID, revoked client ID, owner key, user key)."""
    # After the start: attestd creates the database, attestctl only uses one that exists.
    with open(os.path.join(work, "attestctl.log"), "ab") as errors:
        def integration(workspace, name):
            return create_integration(attestctl, db, workspace, name, team_id, bundle_id,
                                      extra=("--environment", "development", "--json"), stderr=errors)

        client_id = integration("ws_check_openapi", "check-openapi")
        revoked_id = integration("ws_check_revoked", "check-openapi revoked")
        subprocess.run([attestctl, "integration", "revoke", "--db", db, "--yes", revoked_id], stdout=subprocess.DEVNULL,
                       stderr=errors, check=True, timeout=60)

        def admin_key(role):
            return subprocess.run([attestctl, "admin-key", "create", "--db", db, "--workspace", "ws_check_openapi", "--role", role,
                                   "--name", "check-openapi " + role], stdout=subprocess.PIPE, stderr=errors, check=True,
                                  timeout=60, text=True).stdout.strip()

        owner_key, user_key = admin_key("owner"), admin_key("user")
    return client_id, revoked_id, owner_key, user_key


def phase_a_flows(problems, server, ids, secret):
    """The recorded flow on the device address and the admin flow on the admin listener; the access token."""
    client_id, revoked_id, owner_key, user_key = ids
    token = ""
    try:
        failed, token = recorded_flow("http://127.0.0.1:%d" % server.port, client_id, revoked_id, secret)
    except SystemExit as error:  # a /test/ call failed: the message says which
        print(error, file=sys.stderr)
        failed = 1
    except Exception:
        traceback.print_exc()
        failed = 1
    if failed:
        problems.fail("recorded flow: some answers do not match the spec (above)")
    try:
        admin_failed = admin_flow("http://127.0.0.1:%d" % server.admin_port, client_id, revoked_id, owner_key, user_key)
    except Exception:
        traceback.print_exc()
        admin_failed = 1
    if admin_failed:
        problems.fail("admin flow: some answers do not match the spec (above)")
    return token


def fuzz(problems, server, work, config, env, venv_bin):
    """schemathesis on the device address (every operation but the admin ones), then on the admin
    listener (the admin operations only, as a workspace owner); its output, as lines."""
    max_time = os.environ.get("CHECK_OPENAPI_MAX_TIME", "75")
    admin_max_time = os.environ.get("CHECK_OPENAPI_ADMIN_MAX_TIME", "30")
    max_examples = os.environ.get("CHECK_OPENAPI_MAX_EXAMPLES", "25")
    seed = os.environ.get("CHECK_OPENAPI_SEED", "")
    st_out = []
    for label, port, tag, seconds in (("device address", server.port, ["--exclude-tag", "admin"], max_time),
                                      ("admin listener", server.admin_port, ["--include-tag", "admin"], admin_max_time)):
        command = ["st", "--config-file", config, "run", SPEC, "--url", "http://127.0.0.1:%d" % port, *tag,
                   "--checks", ST_CHECKS, "--max-examples", max_examples, "--max-time", seconds, "--max-response-time", "2",
                   "--request-timeout", "5", "--generation-database", "none", "--no-color", *(["--seed", seed] if seed else [])]
        print("+ " + " ".join(command), file=sys.stderr, flush=True)
        st = subprocess.Popen([os.path.join(venv_bin, "st"), *command[1:]], cwd=work, env=env, stdout=subprocess.PIPE)
        with open(os.path.join(work, "schemathesis.out"), "ab") as copy:
            for line in st.stdout:  # as `tee`: to stdout and to the file
                sys.stdout.buffer.write(line)
                sys.stdout.buffer.flush()
                copy.write(line)
                st_out.append(line.decode(errors="replace"))
        status = exit_status(st.wait())
        if status != 0:
            problems.fail("schemathesis on the %s exited %d (failures above)" % (label, status))
    return st_out


def phase_b(problems, servers, work, db, secret_file, secret, ids, key_id, token, venv_bin):
    """schemathesis against a production-mode attestd on the same database; its output, as lines."""
    client_id, revoked_id, owner_key, _ = ids
    print("== phase B: schemathesis against production-mode attestd (%ss)" % os.environ.get("CHECK_OPENAPI_MAX_TIME", "75"),
          file=sys.stderr, flush=True)
    log_b = os.path.join(work, "attestd.log")
    server = servers.start(log_b, "--db", db, "--gateway-secret-file", secret_file)
    config = os.path.join(work, "schemathesis.toml")
    with open(config, "w") as f:
        f.write(schemathesis_config(client_id, revoked_id, key_id, token))
    env = dict(os.environ, CHECK_OPENAPI_GATEWAY_SECRET=secret, CHECK_OPENAPI_ACCESS_TOKEN=token,
               CHECK_OPENAPI_ADMIN_KEY=owner_key)
    st_out = fuzz(problems, server, work, config, env, venv_bin)
    log_text = server.log_text()
    errors = [line for line in log_text.splitlines() if '"level":"error"' in line]
    if errors:
        problems.fail("attestd logged errors during fuzzing:")
        for line in errors[:20]:
            print(line, file=sys.stderr)
    servers.stop(log_b)
    with open(log_b, errors="replace") as f:
        statuses = collections.Counter(re.findall(r'"status":([0-9]*)', f.read()))
    print("attestd's answers during fuzzing (status x count): %s" % " ".join(
        "%sx%d" % (code, count) for code, count in sorted(statuses.items())), file=sys.stderr)
    return st_out


def verdict(problems, st_out, elapsed):
    """The last line, PASS or FAIL with the problems; the exit status."""
    generated = re.findall(r"([0-9]+) generated", "".join(st_out))
    cases = "+".join(generated[-2:]) if generated else "?"
    if not problems.failures:
        print("check-openapi: PASS (spec valid, recorded flow conforms, schemathesis %s: %s cases, no failures) in %d s" % (
            importlib.metadata.version("schemathesis"), cases, elapsed))
        return 0
    for problem in problems.failures:
        print("  problem: " + (problem.rsplit(":", 1)[0] if ":" in problem else problem))
    print("check-openapi: FAIL (%d problems) in %d s" % (len(problems.failures), elapsed))
    return 1


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True, help="directory of the built attestd and attestctl")
    parser.add_argument("--work", required=True, help="a private scratch directory (the caller removes it)")
    parser.add_argument("--started", type=int, default=int(time.time()), help="when the check started (epoch seconds)")
    a = parser.parse_args()
    work = os.path.abspath(a.work)
    attestd, attestctl = os.path.join(a.bin, "attestd"), os.path.join(a.bin, "attestctl")
    venv_bin = os.path.dirname(sys.executable)
    problems = Tally(out=sys.stderr)  # only FAIL lines: the problems
    servers = Server(attestd, problems)

    def elapsed():
        return int(time.time()) - a.started

    def interrupted(signum, frame):
        raise SystemExit(130)

    signal.signal(signal.SIGTERM, interrupted)
    try:
        print("== validate docs/openapi.yaml", file=sys.stderr, flush=True)
        if subprocess.run([os.path.join(venv_bin, "openapi-spec-validator"), SPEC], stdout=sys.stderr).returncode != 0:
            problems.fail("docs/openapi.yaml is not a valid OpenAPI document")
            print("check-openapi: FAIL (invalid spec) in %d s" % elapsed())
            return 1

        # The recorded device: an iOS 14.4 development build whose client data is "wurzelpfropf".
        with open(os.path.join(FIXTURES, "veehaitch_ios-14.4_attestation.json")) as f:
            recorded = json.load(f)
        team_id, bundle_id, key_id = recorded["team_id"], recorded["bundle_id"], recorded["key_id_b64"]
        db = os.path.join(work, "attestd.sqlite")
        secret_file, secret = gateway_secret(work)

        print("== phase A: recorded device through attestd --insecure-test-mode", file=sys.stderr, flush=True)
        log_a = os.path.join(work, "attestd-test-mode.log")
        server = servers.start(log_a, "--db", db, "--gateway-secret-file", secret_file, "--insecure-test-mode")
        ids = provision(attestctl, db, work, team_id, bundle_id)
        os.chdir(work)
        token = phase_a_flows(problems, server, ids, secret)
        servers.stop(log_a)

        st_out = phase_b(problems, servers, work, db, secret_file, secret, ids, key_id, token, venv_bin)
        return verdict(problems, st_out, elapsed())
    finally:
        servers.cleanup()


if __name__ == "__main__":
    sys.exit(main())
