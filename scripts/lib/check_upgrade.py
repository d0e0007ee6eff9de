"""A rolling upgrade of two attestd nodes on one PostgreSQL database, from the previous release to
this build and back; run by scripts/check upgrade, which builds the previous release's attestd and
attestctl from its commit, starts a throwaway PostgreSQL cluster and exports PG_URL.

  1. Both nodes on the previous release start on the empty database (its schema).
  2. Node A is upgraded (stopped, the new build started: it applies the release's migration). Node
     B, still on the previous release, goes on serving on the new schema: tokens minted on either
     node authorize on both, a token revoked by either release's attestctl is refused by both at
     once, an integration revoked by the old attestctl is refused by both; a disabled admin key is
     refused by the new node (the old one does not know to: docs/OPERATIONS.md, upgrades).
  3. Node B is upgraded: both on the new release; the disabled key is refused by both.
  4. Rollback: node A goes back to the previous release, on the new schema, and serves.
Throughout, devices attest and refresh against the nodes that are up (`attest-load refresh`, one
round a second): every round must end without an error. Everything listens on 127.0.0.1; every
wait is bounded. Prints PASS/FAIL lines, then "N passed, N failed"; exits 1 when anything failed.
"""

import argparse
import http.client
import json
import os
import subprocess
import sys
import threading
import time

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # scripts/lib/
from attestd_testlib import Attestd, create_integration, run_check  # noqa: E402

HOST = "127.0.0.1"
APP_ID = "ABCDE12345.com.example.app"


def request(port, method, path, headers=None, body=None):
    """(status, parsed JSON or {}) of one request on a new connection."""
    connection = http.client.HTTPConnection(HOST, port, timeout=10)
    try:
        connection.request(method, path, body=body, headers=headers or {})
        response = connection.getresponse()
        data = response.read()
        try:
            return response.status, json.loads(data) if data else {}
        except ValueError:
            return response.status, {}
    finally:
        connection.close()


class Fleet:
    """Two nodes, each on the old or the new build, and what the check made on the way."""

    def __init__(self, args, work):
        self.args, self.work = args, work
        self.nodes = {}
        self.generation = 0
        self.anchor = os.path.join(work, "anchor.pem")
        self.state = os.path.join(work, "state")
        self.secret = os.path.join(work, "gateway-secret")
        subprocess.run([self.ctl("new"), "simulate", "--write-trust-anchor", self.anchor, "--state", self.state],
                       check=True, capture_output=True, timeout=60)
        with open(self.secret, "w") as f:
            f.write("gateway-secret-for-the-upgrade-check-0123\n")
        os.chmod(self.secret, 0o600)

    def bin(self, release):
        return self.args.old if release == "old" else self.args.new

    def ctl(self, release):
        return os.path.join(self.bin(release), "attestctl")

    def start(self, name, release):
        self.generation += 1
        log = os.path.join(self.work, "%s-%d-%s.log" % (name, self.generation, release))
        node = Attestd(os.path.join(self.bin(release), "attestd"), log,
                       ["--db", self.args.db, "--trust-anchor", self.anchor, "--gateway-secret-file", self.secret,
                        "--threads", "2", "--address-rate", "0", "--challenge-rate", "0", "--attest-rate", "0",
                        "--connections-per-address", "0"],
                       stdout=subprocess.DEVNULL, start_seconds=30)
        node.release = release
        self.nodes[name] = node
        return node

    def version(self, name):
        status, body = request(self.nodes[name].port, "GET", "/healthz")
        return status, body.get("version"), body.get("schema")

    def token(self, name, client_id):
        """A new device's access token, attested on node `name`."""
        out = subprocess.run(
            [os.path.join(self.args.new, "attest-load"), "token", "--port", str(self.nodes[name].port), "--client-id", client_id,
             "--app-id", APP_ID, "--state", self.state], capture_output=True, text=True, timeout=60)
        return out.stdout.strip() if out.returncode == 0 else None

    def authorizes(self, token):
        """{node: status of /v1/authorize} on every node."""
        return {name: request(node.port, "GET", "/v1/authorize", {"Authorization": "Bearer " + token})[0]
                for name, node in sorted(self.nodes.items())}

    def admin(self, key):
        """{node: status of GET /admin/v1/me} with an admin key on every node's admin listener."""
        return {name: request(node.admin_port, "GET", "/admin/v1/me", {"Authorization": "Bearer " + key})[0]
                for name, node in sorted(self.nodes.items())}


class Traffic(threading.Thread):
    """`attest-load refresh` rounds of one second against the nodes in `ports`, until stopped."""

    def __init__(self, fleet, client_id):
        super().__init__(daemon=True)
        self.fleet, self.client_id = fleet, client_id
        self.ports = []
        self.lock = threading.Condition()
        self.rounds = []
        self.running = True

    def use(self, ports):
        """Sends the next rounds to `ports` only, once the round under way (maybe to others) ended."""
        with self.lock:
            self.ports = list(ports)
            seen = len(self.rounds)
            self.lock.wait_for(lambda: len(self.rounds) > seen or not self.running, timeout=30)

    def run(self):
        index = 0
        while self.running:
            with self.lock:
                ports = list(self.ports)
            if not ports:
                time.sleep(0.1)
                continue
            port = ports[index % len(ports)]
            index += 1
            out = subprocess.run(
                [os.path.join(self.fleet.args.new, "attest-load"), "refresh", "--port", str(port), "--client-id", self.client_id,
                 "--app-id", APP_ID, "--state", self.fleet.state, "--connections", "2", "--seconds", "1"],
                capture_output=True, text=True, timeout=60)
            errors = next((int(line.split()[1]) for line in out.stdout.splitlines() if line.startswith("errors ")), None)
            with self.lock:
                self.rounds.append((port, out.returncode, errors, out.stderr.strip()[-300:]))
                self.lock.notify_all()

    def stop(self):
        with self.lock:
            self.running = False
            self.lock.notify_all()
        self.join(timeout=60)


def check(tally, work, args):
    fleet = Fleet(args, work)
    traffic = None
    try:
        for name in ("a", "b"):
            node = fleet.start(name, "old")
            tally.check(node.started(), "1: node %s starts on the previous release (%s)" % (name, args.old_version))
        versions = [fleet.version(name) for name in ("a", "b")]
        tally.check(all(v == (200, args.old_version, args.old_schema) for v in versions),
                    "1: both nodes report %s, schema %d" % (args.old_version, args.old_schema), repr(versions))
        client_id = create_integration(fleet.ctl("old"), args.db, "ws_upgrade", "Messages", "ABCDE12345", "com.example.app")
        doomed = create_integration(fleet.ctl("old"), args.db, "ws_upgrade", "Doomed", "ABCDE12345", "com.example.app")
        keys = {}
        for name in ("Olivia", "Temp"):
            made = subprocess.run([fleet.ctl("old"), "admin-key", "create", "--db", args.db, "--workspace", "ws_upgrade", "--role",
                                   "owner", "--name", name], capture_output=True, text=True, timeout=30)
            keys[name] = made.stdout.strip()
        tally.check(all(k.startswith("adm_") for k in keys.values()), "1: the previous release's attestctl makes admin keys")
        traffic = Traffic(fleet, client_id)
        traffic.start()
        traffic.use([fleet.nodes["a"].port, fleet.nodes["b"].port])
        kept = [fleet.token("a", client_id), fleet.token("b", client_id)]

        # 2. Node A upgraded; B on the previous release, on the new schema.
        traffic.use([fleet.nodes["b"].port])
        tally.check(fleet.nodes["a"].stop() == 0, "2: node a stops cleanly (drained) for its upgrade")
        node = fleet.start("a", "new")
        migrated = '"migration applied"' in node.log_text() and '"migration.id":%d' % args.new_schema in node.log_text()
        tally.check(node.started() and fleet.version("a") == (200, args.new_version, args.new_schema) and migrated,
                    "2: node a starts on this build, applies its migration and reports %s, schema %d"
                    % (args.new_version, args.new_schema), repr(fleet.version("a")))
        traffic.use([fleet.nodes["a"].port, fleet.nodes["b"].port])
        status, _ = request(fleet.nodes["b"].port, "GET", "/readyz")
        tally.check(status == 200, "2: node b, still on %s, is ready on the new schema" % args.old_version)
        minted = {"a": fleet.token("a", client_id), "b": fleet.token("b", client_id)}
        kept += minted.values()
        tally.check(all(minted.values()) and all(set(fleet.authorizes(t).values()) == {200} for t in kept),
                    "2: tokens minted on either node before and during the upgrade authorize on both")
        for release, name in (("old", "a"), ("new", "b")):
            token = fleet.token(name, client_id)
            revoke = subprocess.run([fleet.ctl(release), "token", "revoke", token or "none", "--db", args.db],
                                    capture_output=True, text=True, timeout=30)
            answers = fleet.authorizes(token or "none")
            tally.check(token and revoke.returncode == 0 and set(answers.values()) == {401},
                        "2: a token minted on node %s and revoked by the %s release's attestctl is refused by both nodes at once"
                        % (name, release), "%s %s" % (revoke.stderr.strip()[-200:], answers))
        doomed_token = fleet.token("a", doomed)
        revoke = subprocess.run([fleet.ctl("old"), "integration", "revoke", doomed, "--db", args.db, "--yes"],
                                capture_output=True, text=True, timeout=30)
        answers = fleet.authorizes(doomed_token or "none")
        tally.check(doomed_token and revoke.returncode == 0 and set(answers.values()) == {401},
                    "2: an integration revoked by the previous release's attestctl on the new schema: its tokens are refused by both",
                    "%s %s" % (revoke.stderr.strip()[-200:], answers))
        disable = subprocess.run([fleet.ctl("new"), "admin-key", "disable", admin_key_id(fleet, "Temp"), "--db", args.db],
                                 capture_output=True, text=True, timeout=30)
        answers = fleet.admin(keys["Temp"])
        tally.check(disable.returncode == 0 and answers == {"a": 401, "b": 200} and fleet.admin(keys["Olivia"]) == {"a": 200, "b": 200},
                    "2: a disabled admin key is refused by the upgraded node; the node on %s accepts it, as documented"
                    % args.old_version, repr(answers))

        # 3. Node B upgraded: the whole fleet on this build.
        traffic.use([fleet.nodes["a"].port])
        tally.check(fleet.nodes["b"].stop() == 0, "3: node b stops cleanly (drained) for its upgrade")
        node = fleet.start("b", "new")
        tally.check(node.started() and fleet.version("b") == (200, args.new_version, args.new_schema),
                    "3: node b starts on this build (the schema is current: nothing to apply)")
        traffic.use([fleet.nodes["a"].port, fleet.nodes["b"].port])
        tally.check(fleet.admin(keys["Temp"]) == {"a": 401, "b": 401}, "3: the disabled admin key is refused by both nodes")
        tally.check(all(set(fleet.authorizes(t).values()) == {200} for t in kept),
                    "3: every token minted since the first node started and not revoked authorizes on both")

        # 4. Rollback: node A back on the previous release, on the new schema.
        traffic.use([fleet.nodes["b"].port])
        fleet.nodes["a"].stop()
        node = fleet.start("a", "old")
        tally.check(node.started() and fleet.version("a") == (200, args.old_version, args.old_schema),
                    "4: node a goes back to %s on the new schema and starts" % args.old_version, repr(fleet.version("a")))
        traffic.use([fleet.nodes["a"].port, fleet.nodes["b"].port])
        token = fleet.token("a", client_id)
        tally.check(token and set(fleet.authorizes(token).values()) == {200} and all(set(fleet.authorizes(t).values()) == {200}
                                                                                     for t in kept),
                    "4: after the rollback both nodes mint and authorize tokens")
        traffic.use([fleet.nodes["a"].port, fleet.nodes["b"].port])
    finally:
        if traffic:
            traffic.stop()
        for node in fleet.nodes.values():
            node.stop()
    rounds = traffic.rounds if traffic else []
    failed = [r for r in rounds if r[1] != 0 or r[2] != 0]
    tally.check(len(rounds) >= 6 and not failed,
                "devices attested and refreshed throughout: %d rounds of one second, none with an error" % len(rounds),
                repr(failed[:3]))


def admin_key_id(fleet, name):
    listed = subprocess.run([fleet.ctl("new"), "admin-key", "list", "--db", fleet.args.db, "--json"], capture_output=True,
                            text=True, timeout=30)
    return next(k["id"] for k in json.loads(listed.stdout) if k["name"] == name)


def version(bin_dir):
    """(release, schema) from `attestd --version`: "attestd 0.4.0 (schema 13, commit ...)"."""
    text = subprocess.run([os.path.join(bin_dir, "attestd"), "--version"], capture_output=True, text=True, timeout=30).stdout
    words = text.replace("(", " ").replace(",", " ").replace(")", " ").split()
    return words[1], int(words[words.index("schema") + 1])


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--old", required=True, help="the previous release's binaries")
    parser.add_argument("--new", required=True, help="this build's binaries")
    args = parser.parse_args()
    args.db = os.environ["PG_URL"]
    args.old_version, args.old_schema = version(args.old)
    args.new_version, args.new_schema = version(args.new)
    print("upgrading %s (schema %d) to %s (schema %d)" % (args.old_version, args.old_schema, args.new_version, args.new_schema))
    run_check("check-upgrade", lambda tally, work: check(tally, work, args))


if __name__ == "__main__":
    main()
