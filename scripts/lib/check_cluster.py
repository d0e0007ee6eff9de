"""Three attestd nodes on one PostgreSQL behind nginx round robin; run by scripts/check cluster,
which installs PostgreSQL and nginx, starts a throwaway cluster and exports PG_URL, PG_BIN, PG_DIR,
PG_PORT and PG_OPTIONS (scripts/lib/postgres.sh).

  A. Apple's root, test mode: three nodes start at once on the empty database; every recorded real
     device whose challenge is known replays through the balancer (attestation, then its assertions),
     the clock set on every node and each challenge seeded through a different node than the one
     nginx picks.
  B. The simulator's root:
     1. attestctl simulate through the balancer;
     2. a challenge issued by one node, redeemed through another, refused on a third;
     3. races across the nodes: one challenge and twelve attestations; one counter and twelve
        assertions: exactly one wins each, the others get the same 4xx as on one node, never a 5xx;
     4. a revocation by attestctl: once it has returned, no node accepts the integration's tokens
        or challenges;
     5. kill -9 of one node while devices register through the balancer: every token acknowledged
        before or after still authorizes on the surviving nodes, and they go on serving;
     6. PostgreSQL stopped: every node answers /readyz, /v1/challenge and /v1/authorize with 503
        and Retry-After within a few seconds, and /healthz with 200; started again: every node recovers by itself;
     7. PostgreSQL crashed (immediate stop) and recovered: a challenge issued before the crash is
        unknown (the table is UNLOGGED), and devices ask again and go on.

Every wait is bounded; everything listens on 127.0.0.1. Prints PASS/FAIL lines, then
"N passed, N failed"; exits 1 when anything failed.
"""

import argparse
import base64
import concurrent.futures
import glob
import hashlib
import http.client
import json
import os
import socket
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # scripts/lib/
from attestd_testlib import Attestd, create_integration, free_port, run_check  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "fixtures", "appattest", "recorded")
HOST = "127.0.0.1"


def request(port, method, path, body=None, headers=None, timeout=10.0):
    """One request on a new connection: (status, headers dict with lowercase names, parsed JSON or {})."""
    connection = http.client.HTTPConnection(HOST, port, timeout=timeout)
    try:
        payload = json.dumps(body).encode() if isinstance(body, dict) else body
        all_headers = {"Content-Type": "application/json"} if isinstance(body, dict) else {}
        all_headers.update(headers or {})
        connection.request(method, path, body=payload, headers=all_headers)
        response = connection.getresponse()
        data = response.read()
        try:
            parsed = json.loads(data) if data else {}
        except ValueError:
            parsed = {}
        return response.status, {k.lower(): v for k, v in response.getheaders()}, parsed
    finally:
        connection.close()


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class Cluster:
    """Three attestd nodes and an nginx balancer in front of them."""

    def __init__(self, bin_dir, work, pg_url, name, flags):
        self.bin = bin_dir
        self.work = work
        self.pg_url = pg_url
        self.name = name
        self.flags = flags
        self.nodes = []
        self.nginx = None
        self.balancer = None

    def start_nodes(self):
        """Starts the three nodes at once (they race to migrate an empty database)."""
        def start(index):
            log = os.path.join(self.work, "%s-node%d.log" % (self.name, index))
            return Attestd(os.path.join(self.bin, "attestd"), log,
                           ["--db", self.pg_url, "--threads", "2", "--address-rate", "0", *self.flags],
                           stdout=subprocess.DEVNULL, start_seconds=30)
        with concurrent.futures.ThreadPoolExecutor(3) as pool:
            self.nodes = list(pool.map(start, range(3)))
        return all(node.started() for node in self.nodes)

    def start_balancer(self):
        self.balancer = free_port()
        conf_dir = os.path.join(self.work, "nginx-" + self.name)
        os.makedirs(conf_dir, exist_ok=True)
        servers = "".join("        server %s:%d max_fails=1 fail_timeout=2s;\n" % (HOST, node.port) for node in self.nodes)
        conf = os.path.join(conf_dir, "nginx.conf")
        with open(conf, "w") as f:
            f.write("""worker_processes 1;
pid %(dir)s/nginx.pid;
error_log %(dir)s/error.log warn;
events { worker_connections 1024; }
http {
    access_log off;
    client_body_temp_path %(dir)s/body;
    proxy_temp_path %(dir)s/proxy;
    fastcgi_temp_path %(dir)s/fastcgi;
    uwsgi_temp_path %(dir)s/uwsgi;
    scgi_temp_path %(dir)s/scgi;
    upstream attestd {
%(servers)s        keepalive 16;
    }
    server {
        listen %(host)s:%(port)d;
        location / {
            proxy_pass http://attestd;
            proxy_http_version 1.1;
            proxy_set_header Connection "";
            proxy_connect_timeout 2s;
        }
    }
}
""" % {"dir": conf_dir, "servers": servers, "host": HOST, "port": self.balancer})
        self.nginx = subprocess.Popen([os.environ.get("NGINX", "nginx"), "-c", conf, "-p", conf_dir, "-g", "daemon off;"],
                                      stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            try:
                with socket.create_connection((HOST, self.balancer), timeout=1):
                    return True
            except OSError:
                time.sleep(0.1)
        return False

    def stop(self):
        if self.nginx and self.nginx.poll() is None:
            self.nginx.terminate()
            try:
                self.nginx.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.nginx.kill()
        for node in self.nodes:
            node.stop()

    def ports(self, alive_only=True):
        return [node.port for node in self.nodes if node.running() or not alive_only]


# ---------------------------------------------------------------------------------------------
# Phase A: recorded devices


def client_data_candidates(case):
    """Every recorded rendering of a case's client data, as bytes (the order of RecordedCase)."""
    out = []
    if case.get("client_data_b64"):
        out.append(base64.b64decode(case["client_data_b64"]))
    if case.get("client_data_b64url_as_stored"):
        text = case["client_data_b64url_as_stored"]
        out.append(base64.urlsafe_b64decode(text + "=" * (-len(text) % 4)))
    if case.get("client_data_utf8") is not None:
        out.append(case["client_data_utf8"].encode())
    if case.get("challenge_b64"):
        out.append(base64.b64decode(case["challenge_b64"]))
    if case.get("challenge_hex"):
        out.append(bytes.fromhex(case["challenge_hex"]))
    if case.get("challenge_utf8") is not None:
        out.append(case["challenge_utf8"].encode())
    return out


def hashed_client_data(case):
    """The recorded bytes whose SHA-256 is the case's clientDataHash (the challenge to seed), or None."""
    if not case.get("client_data_hash_b64"):
        return None
    wanted = base64.b64decode(case["client_data_hash_b64"])
    for candidate in client_data_candidates(case):
        if 1 <= len(candidate) <= 256 and hashlib.sha256(candidate).digest() == wanted:
            return candidate
    return None


def replayable_devices():
    """(attestation case, [assertion cases in counter order]) for every attestation sent as recorded."""
    cases = [json.load(open(path)) for path in sorted(glob.glob(os.path.join(FIXTURES, "*.json")))]
    attestations = {}
    for case in cases:
        if (case.get("kind") == "attestation" and case.get("expected_result") == "valid" and case.get("object_b64")
                and case.get("key_id_b64") and case.get("environment") and case.get("verify_at_unix")
                and not case["id"].endswith("_partial") and hashed_client_data(case) is not None):
            attestations[case["id"]] = (case, [])
    for case in cases:
        paired = case.get("paired_attestation_id")
        if (case.get("kind") == "assertion" and case.get("expected_result") == "valid" and paired in attestations
                and case.get("object_b64") and hashed_client_data(case) is not None):
            attestations[paired][1].append(case)
    for _, assertions in attestations.values():
        assertions.sort(key=lambda c: c.get("counter_in_object") or 0)
    return list(attestations.values())


def phase_a(tally, args, work, pg_url):
    cluster = Cluster(args.bin, work, pg_url, "a", ["--insecure-test-mode"])
    try:
        tally.check(cluster.start_nodes(), "A: three nodes started together on the empty database")
        attestctl = os.path.join(args.bin, "attestctl")
        up = subprocess.run([attestctl, "migrate", "--db", pg_url], capture_output=True, text=True, timeout=60)
        tally.check(up.returncode == 0 and "up to date" in up.stdout,
                    "A: the database carries every migration once (attestctl migrate: %s)" % up.stdout.strip())
        tally.check(cluster.start_balancer(), "A: nginx balances over the three nodes")
        devices = replayable_devices()
        attested = refreshed = 0
        failures = []
        for index, (attestation, assertions) in enumerate(devices):
            environment = attestation["environment"]
            client_id = create_integration(
                attestctl, pg_url, "ws_recorded", attestation["id"][:60], attestation["team_id"], attestation["bundle_id"],
                extra=("--environment", environment))
            for step, case in [("attest", attestation)] + [("token", a) for a in assertions]:
                at = case.get("verify_at_unix") or attestation["verify_at_unix"]
                for port in cluster.ports():
                    request(port, "POST", "/test/clock", {"now": str(at)})
                seed_port = cluster.ports()[index % 3]
                challenge = b64url(hashed_client_data(case))
                status, _, _ = request(seed_port, "POST", "/test/challenge", {"client_id": client_id, "challenge": challenge})
                if status != 200:
                    failures.append("%s: seeding answered %d" % (case["id"], status))
                    break
                body = {"client_id": client_id, "key_id": attestation["key_id_b64"], "challenge": challenge}
                body["attestation" if step == "attest" else "assertion"] = case["object_b64"]
                status, _, answer = request(cluster.balancer, "POST", "/v1/" + step, body)
                if status != 200:
                    failures.append("%s: %d %s" % (case["id"], status, answer.get("reason")))
                    break
                if step == "attest":
                    attested += 1
                else:
                    refreshed += 1
        tally.check(not failures and attested == len(devices) and attested >= 10,
                    "A: %d recorded devices attested and %d recorded assertions refreshed through the balancer%s"
                    % (attested, refreshed, "; " + "; ".join(failures) if failures else ""))
    finally:
        cluster.stop()


# ---------------------------------------------------------------------------------------------
# Phase B: synthetic devices


def load(args, mode, ports, client_id, count=12, timeout=120):
    out = subprocess.run(
        [os.path.join(args.bin, "attest-load"), mode, "--port", ",".join(map(str, ports)), "--client-id", client_id,
         "--app-id", "ABCDE12345.com.example.app", "--state", args.state, "--connections", str(count)],
        capture_output=True, text=True, timeout=timeout)
    return out.returncode, out.stdout.strip(), out.stderr.strip()


def simulate(args, port, client_id, devices, refreshes, timeout=180):
    return subprocess.run(
        [os.path.join(args.bin, "attestctl"), "simulate", "--url", "http://%s:%d" % (HOST, port), "--client-id", client_id,
         "--team-id", "ABCDE12345", "--bundle-id", "com.example.app", "--devices", str(devices), "--refreshes",
         str(refreshes), "--concurrency", "8", "--state", args.state], capture_output=True, text=True, timeout=timeout)


def token_for(args, port, client_id):
    code, out, err = load(args, "token", [port], client_id, count=1, timeout=30)
    return out if code == 0 and out.startswith("atk_") else None


def authorizes(port, token):
    return request(port, "GET", "/v1/authorize", headers={"Authorization": "Bearer " + token})[0] == 200


def postgres(action):
    """Runs a function of scripts/lib/postgres.sh on the cluster scripts/check cluster started."""
    subprocess.run(["bash", "-c", ". scripts/lib/deps.sh; . scripts/lib/postgres.sh; " + action], cwd=ROOT, check=True,
                   timeout=90, stdout=subprocess.DEVNULL)


def phase_b(tally, args, work, pg_url):
    attestctl = os.path.join(args.bin, "attestctl")
    root = os.path.join(work, "simulator-root.pem")
    subprocess.run([attestctl, "simulate", "--state", args.state, "--write-trust-anchor", root], check=True, timeout=60,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    cluster = Cluster(args.bin, work, pg_url, "b", ["--trust-anchor", root])
    try:
        tally.check(cluster.start_nodes() and cluster.start_balancer(), "B: three nodes with the simulator's root behind nginx")
        client_id = create_integration(attestctl, pg_url, "ws_cluster", "cluster", "ABCDE12345", "com.example.app",
                                       extra=("--environment", "production"))

        races(tally, args, cluster, client_id)
        tokens = revocation(tally, args, cluster, pg_url)
        victim, survivors = kill_under_load(tally, args, cluster, client_id)
        database_restart(tally, args, cluster, client_id, survivors, tokens)
        database_crash(tally, args, cluster, client_id, survivors)
        tally.check(all(node.running() for node in cluster.nodes if node is not victim),
                    "B: the surviving nodes ran throughout (no restart)")
        logs = "".join(node.log_text() for node in cluster.nodes)
        password = pg_url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[-1]
        tally.check(password not in logs, "B: the database password appears in no node's log")
    finally:
        cluster.stop()


def races(tally, args, cluster, client_id):
    """B1-B3: the simulator through the balancer; a challenge across nodes; the challenge and counter races."""
    # 1. The simulator through the balancer.
    run = simulate(args, cluster.balancer, client_id, devices=24, refreshes=3)
    tally.check(run.returncode == 0, "B1: attestctl simulate, 24 devices x 3 refreshes through the balancer, all steps succeeded"
                + ("" if run.returncode == 0 else ": " + (run.stdout + run.stderr)[-600:]))

    # 2. A challenge issued by node 1, redeemed through node 2, then refused on node 3.
    code, out, err = load(args, "race-challenge", cluster.ports()[:2], client_id, count=1)
    tally.check(code == 0 and json.loads(out or "{}") == {"ok": 1},
                "B2: a challenge issued by one node is redeemed through another (%s)" % (out or err))
    status, _, _ = request(cluster.ports()[0], "POST", "/v1/challenge", {"client_id": client_id})
    tally.check(status == 200, "B2: every node issues challenges for the same integration")

    # 3. The races.
    code, out, err = load(args, "race-challenge", cluster.ports(), client_id, count=12)
    tally_json = json.loads(out or "{}")
    tally.check(code == 0 and tally_json.get("ok") == 1 and tally_json.get("401 invalid_challenge/challenge_used") == 11,
                "B3: one challenge, 12 attestations over 3 nodes: one registers, 11 get 401 challenge_used (%s)" % (out or err))
    code, out, err = load(args, "race-counter", cluster.ports(), client_id, count=12)
    tally_json = json.loads(out or "{}")
    tally.check(code == 0 and tally_json.get("ok") == 1 and tally_json.get("401 assertion_rejected/counter_not_increasing") == 11,
                "B3: one counter, 12 assertions over 3 nodes: one advances, 11 get 401 counter_not_increasing (%s)"
                % (out or err))


def revocation(tally, args, cluster, pg_url):
    """B4: a revocation seen by every node; the tokens of the revoked integration, one per node."""
    attestctl = os.path.join(args.bin, "attestctl")
    # 4. A revocation seen by every node on its next request.
    doomed = create_integration(attestctl, pg_url, "ws_doomed", "doomed", "ABCDE12345", "com.example.app",
                                extra=("--environment", "production"))
    tokens = [token_for(args, port, doomed) for port in cluster.ports()]
    tally.check(all(tokens) and all(authorizes(port, t) for port in cluster.ports() for t in tokens),
                "B4: tokens minted on each node authorize on every node")
    revoke = subprocess.run([attestctl, "integration", "revoke", doomed, "--yes", "--db", pg_url], capture_output=True,
                            text=True, timeout=60)
    refused = [not authorizes(port, t) for port in cluster.ports() for t in tokens]
    challenges = [request(port, "POST", "/v1/challenge", {"client_id": doomed})[0] for port in cluster.ports()]
    tally.check(revoke.returncode == 0 and all(refused) and challenges == [403, 403, 403],
                "B4: once attestctl revoke returned, every node refuses all its tokens and challenges (challenge: %s)"
                % challenges)
    return tokens


def kill_under_load(tally, args, cluster, client_id):
    """B5: kill -9 of a node under load: (the node killed, the ports of the survivors)."""
    # 5. kill -9 of one node while devices register through the balancer.
    acknowledged = []
    errors = []
    lock = threading.Lock()
    stop_at = time.monotonic() + 8

    def register_loop():
        while time.monotonic() < stop_at:
            token = token_for(args, cluster.balancer, client_id)
            with lock:
                (acknowledged if token else errors).append(token)

    threads = [threading.Thread(target=register_loop) for _ in range(3)]
    for thread in threads:
        thread.start()
    time.sleep(3)
    victim = cluster.nodes[1]
    victim.kill9()
    for thread in threads:
        thread.join(timeout=60)
    survivors = cluster.ports()
    lost = [t for t in acknowledged if not all(authorizes(port, t) for port in survivors)]
    tally.check(len(survivors) == 2 and acknowledged and not lost,
                "B5: kill -9 of a node under load: %d registrations acknowledged, all their tokens authorize on both "
                "survivors (%d lost; %d requests failed in flight)" % (len(acknowledged), len(lost), len(errors)))
    after = simulate(args, cluster.balancer, client_id, devices=8, refreshes=2)
    tally.check(after.returncode == 0, "B5: after the kill the balancer's other nodes serve every device")
    return victim, survivors


def database_restart(tally, args, cluster, client_id, survivors, tokens):
    """B6: PostgreSQL stopped and started again under the running nodes."""
    # 6. PostgreSQL restart.
    postgres("attestd_pause_postgres")
    answers = []
    for port in survivors:
        started = time.monotonic()
        ready = request(port, "GET", "/readyz", timeout=15)
        challenge = request(port, "POST", "/v1/challenge", {"client_id": client_id}, timeout=15)
        health = request(port, "GET", "/healthz", timeout=15)
        # authorize answers from a lookup the HTTP worker does not wait for (a deferred answer).
        authorize = request(port, "GET", "/v1/authorize", headers={"Authorization": "Bearer " + tokens[0]}, timeout=15)
        answers.append((ready[0], "retry-after" in ready[1], challenge[0], challenge[2].get("code"), "retry-after" in challenge[1],
                        health[0], authorize[0], "retry-after" in authorize[1], time.monotonic() - started))
    tally.check(all(a[:8] == (503, True, 503, "storage_unavailable", True, 200, 503, True) and a[8] < 10 for a in answers),
                "B6: PostgreSQL down: every node answers /readyz, /v1/challenge and /v1/authorize 503 (storage_unavailable) "
                "with Retry-After, /healthz 200, within seconds (%s)"
                % ["%d/%d/%d/%d in %.1f s" % (a[0], a[2], a[5], a[6], a[8]) for a in answers])
    postgres("attestd_pg_ctl_start")
    deadline = time.monotonic() + 20
    recovered = False
    while time.monotonic() < deadline and not recovered:
        recovered = all(request(port, "GET", "/readyz")[0] == 200 for port in survivors)
        if not recovered:
            time.sleep(0.5)
    tally.check(recovered, "B6: PostgreSQL back: every node is ready again without a restart")
    again = simulate(args, cluster.balancer, client_id, devices=8, refreshes=2)
    tally.check(again.returncode == 0, "B6: and serves devices through the balancer")


def database_crash(tally, args, cluster, client_id, survivors):
    """B7: a PostgreSQL crash: outstanding challenges are gone after recovery; devices ask again."""
    # 7. PostgreSQL crash: challenges are UNLOGGED, so crash recovery empties their table;
    # a challenge outstanding at the crash is unknown afterwards, and devices ask again.
    def present(challenge):
        """POST /v1/token with `challenge` and an assertion that can never verify: (status, reason)."""
        body = {"client_id": client_id, "key_id": base64.b64encode(bytes(32)).decode(), "challenge": challenge,
                "assertion": base64.b64encode(b"\xa0").decode()}
        status, _, answer = request(cluster.balancer, "POST", "/v1/token", body)
        return status, answer.get("reason")

    before_crash = [request(cluster.balancer, "POST", "/v1/challenge", {"client_id": client_id})[2].get("challenge")
                    for _ in range(2)]
    known = present(before_crash[0])
    postgres("attestd_crash_postgres")
    postgres("attestd_pg_ctl_start")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not all(request(port, "GET", "/readyz")[0] == 200 for port in survivors):
        time.sleep(0.5)
    unknown = present(before_crash[1])
    tally.check(known[1] != "challenge_unknown" and unknown == (401, "challenge_unknown"),
                "B7: PostgreSQL crash: a challenge issued before it is unknown after recovery (before: %s, after: %s)"
                % (known, unknown))
    after_crash = simulate(args, cluster.balancer, client_id, devices=8, refreshes=2)
    tally.check(after_crash.returncode == 0, "B7: devices ask again and attest and refresh through the balancer")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    args = parser.parse_args()
    pg_url = os.environ["PG_URL"]

    def phases(tally, work):
        args.state = os.path.join(work, "simulator")
        phase_a(tally, args, work, pg_url)
        # Phase B on a fresh database: the recorded devices' clock and trust anchor stay behind.
        postgres_reset(pg_url)
        phase_b(tally, args, work, pg_url)
    run_check("check-cluster", phases)


def postgres_reset(pg_url):
    """Drops and re-creates the attestd database (as the cluster's superuser)."""
    postgres('attestd_psql_admin postgres "DROP DATABASE attestd WITH (FORCE)" "CREATE DATABASE attestd OWNER attestd"')


if __name__ == "__main__":
    main()
