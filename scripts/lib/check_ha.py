"""Automatic failover under Patroni and etcd, run by scripts/check ha, with the shipped files.

Three etcd members (deploy/patroni/etcd.conf), two Patroni-managed PostgreSQL servers
(deploy/patroni/config.yml as shipped, each host's part from deploy/patroni/patroni_env.conf),
and two attestd nodes on the multi-host URI with target_session_attrs=read-write, all on
127.0.0.1 ports; synthetic devices attest, refresh and authorize through both nodes throughout:

  (a) the leader's machine lost (kill -9 of its Patroni and its postmaster): both nodes serve
      again within ttl + 5 s with no human; every token answered 200 is on the new leader and
      authorizes; meanwhile only 200, 503 with Retry-After, or 401 challenge_unknown (challenges
      are UNLOGGED, so a challenge the old leader issued is gone);
  (b) a revocation right after it refuses at once on both nodes;
  (c) the lost host back as a replica, then a planned `patronictl switchover`: back within 10 s;
  (d) the synchronous standby lost: writes resume with no human, no request past its deadline;
  (e) one etcd member of three lost: nothing changes; two lost (no quorum): Patroni's failsafe keeps
      the leader read-write while it reaches the standby's Patroni, and every answer stays honest.

`--leader-losses N` instead repeats (a) N times without the other steps and prints the median and
worst recovery (docs/OPERATIONS.md). Every wait is bounded; prints PASS/FAIL lines, then
"N passed, N failed"; exits 1 when anything failed.
"""

import argparse
import hashlib
import json
import os
import re
import secrets
import shutil
import signal
import statistics
import subprocess
import sys
import time
import urllib.request

sys.dont_write_bytecode = True
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # scripts/lib/
from attestd_testlib import Attestd, alive, create_integration, free_port, run_check  # noqa: E402
from check_failover import request, wait_for  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
HOST = "127.0.0.1"
APP_ID = "ABCDE12345.com.example.app"
DEVICES = 4
SWITCHOVER_LIMIT = 10.0


def shipped_ttl():
    """bootstrap.dcs.ttl of deploy/patroni/config.yml: the failover's limit is ttl + 5 s."""
    with open(os.path.join(ROOT, "deploy/patroni/config.yml")) as f:
        return int(re.search(r"^\s+ttl: (\d+)", f.read(), re.M).group(1))


TTL = shipped_ttl()
def shipped_assignments(path):
    """NAME=VALUE lines of a shipped environment file, comments aside, in order."""
    with open(path) as f:
        return [line.strip().split("=", 1) for line in f if "=" in line and not line.lstrip().startswith("#")]


def as_postgres(command):
    return ["runuser", "-u", "postgres", "--"] + command if os.geteuid() == 0 else command


class Etcd:
    """One member started from deploy/patroni/etcd.conf, its addresses moved to loopback ports."""

    def __init__(self, work, name, members, index, existing=False):
        self.name, self.client, self.peer = name, members[index][1], members[index][2]
        self.members, self.index, self.work = members, index, work
        env = dict(os.environ)
        for key, value in shipped_assignments(os.path.join(ROOT, "deploy/patroni/etcd.conf")):
            env[key] = value
        env.update({
            "ETCD_NAME": name, "ETCD_DATA_DIR": os.path.join(work, name),
            "ETCD_LISTEN_PEER_URLS": "http://%s:%d" % (HOST, self.peer),
            "ETCD_LISTEN_CLIENT_URLS": "http://%s:%d" % (HOST, self.client),
            "ETCD_INITIAL_ADVERTISE_PEER_URLS": "http://%s:%d" % (HOST, self.peer),
            "ETCD_ADVERTISE_CLIENT_URLS": "http://%s:%d" % (HOST, self.client),
            "ETCD_INITIAL_CLUSTER": ",".join("%s=http://%s:%d" % (n, HOST, p) for n, _, p in members),
        })
        if existing:
            env["ETCD_INITIAL_CLUSTER_STATE"] = "existing"
        self.log = open(os.path.join(work, name + ".log"), "a")
        self.process = subprocess.Popen(["etcd"], env=env, stdout=self.log, stderr=subprocess.STDOUT)

    def kill(self):
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait(timeout=10)

    def restarted(self):
        """The same member started again on its data directory."""
        return Etcd(self.work, self.name, self.members, self.index, existing=True)


def etcd_healthy(etcd):
    endpoints = ",".join("http://%s:%d" % (HOST, member.client) for member in etcd)
    return subprocess.run(["etcdctl", "--endpoints", endpoints, "endpoint", "health"], capture_output=True,
                          timeout=10).returncode == 0


class PatroniNode:
    """One PostgreSQL host: Patroni with the shipped config.yml and its patroni_env.conf."""

    def __init__(self, work, name, etcd_hosts, passwords):
        self.name, self.work = name, work
        self.port, self.rest = free_port(), free_port()
        self.data = os.path.join(work, name, "data")
        os.makedirs(os.path.dirname(self.data), exist_ok=True)
        self.env = {"PATH": "/usr/sbin:/usr/bin:/sbin:/bin", "LANG": "C.UTF-8"}
        for key, value in shipped_assignments(os.path.join(ROOT, "deploy/patroni/patroni_env.conf")):
            self.env[key] = value
        self.env.update({
            "PATRONI_NAME": name, "PATRONI_RESTAPI_LISTEN": "%s:%d" % (HOST, self.rest),
            "PATRONI_RESTAPI_CONNECT_ADDRESS": "%s:%d" % (HOST, self.rest),
            "PATRONI_POSTGRESQL_LISTEN": "%s:%d" % (HOST, self.port),
            "PATRONI_POSTGRESQL_CONNECT_ADDRESS": "%s:%d" % (HOST, self.port),
            "PATRONI_POSTGRESQL_DATA_DIR": self.data, "PATRONI_ETCD3_HOSTS": etcd_hosts,
            "PATRONI_SUPERUSER_PASSWORD": passwords["superuser"], "PATRONI_REPLICATION_PASSWORD": passwords["replication"],
        })
        self.process = None
        self.runs = 0

    def start(self):
        self.runs += 1
        log = open(os.path.join(self.work, "%s.%d.log" % (self.name, self.runs)), "w")
        command = as_postgres(["env", "-i"] + ["%s=%s" % item for item in self.env.items()]
                              + ["patroni", os.path.join(self.work, "config.yml")])
        self.process = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)

    def role(self):
        """'leader', 'sync' (the synchronous standby), 'replica', or None (REST API down)."""
        for role, path in (("leader", "/leader"), ("sync", "/sync")):
            status = request_port(self.rest, path)
            if status is None:
                return None
            if status == 200:
                return role
        return "replica"

    def postmaster(self):
        try:
            with open(os.path.join(self.data, "postmaster.pid")) as f:
                return int(f.readline())
        except (OSError, ValueError):
            return None

    def lose_machine(self):
        """kill -9 of Patroni and the postmaster, as when the host is lost."""
        postmaster = self.postmaster()
        os.killpg(self.process.pid, signal.SIGKILL)
        if postmaster:
            try:
                os.kill(postmaster, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.process.wait(timeout=10)
        wait_for(lambda: not postmaster or not alive(postmaster), 10, step=0.05)

    def stop(self):
        if self.process and self.process.poll() is None:
            self.lose_machine()


def request_port(port, path):
    return request(port, "GET", path, timeout=2)[0]


def psql(node, password, sql, database="postgres"):
    env = dict(os.environ, PGPASSWORD=password)
    command = [os.path.join(os.environ["PG_BIN"], "psql"), "-q", "-X", "-At", "-v", "ON_ERROR_STOP=1", "-h", HOST, "-p",
               str(node.port), "-U", "postgres", "-d", database, "-c", sql]
    return subprocess.run(command, capture_output=True, text=True, timeout=30, check=True, env=env).stdout.split("\n")[:-1]


def roles(nodes):
    return {node.name: node.role() for node in nodes}


def leader_and_sync(nodes):
    return sorted(roles(nodes).values(), key=str) == ["leader", "sync"]


def leader_of(nodes):
    found = [node for node in nodes if node.role() == "leader"]
    return found[0] if len(found) == 1 else None


def cluster(work, tally, etcd, nodes):
    """etcd, then both Patroni nodes (appended to `etcd` and `nodes`, for the caller to stop); returns the
    passwords and whether there is a leader and a sync standby."""
    shutil.copy(os.path.join(ROOT, "deploy/patroni/config.yml"), os.path.join(work, "config.yml"))
    os.chmod(os.path.join(work, "config.yml"), 0o644)
    members = [("etcd%d" % i, free_port(), free_port()) for i in (1, 2, 3)]
    etcd.extend(Etcd(work, name, members, index) for index, (name, _, _) in enumerate(members))
    etcd_hosts = ",".join("%s:%d" % (HOST, client) for _, client, _ in members)
    healthy = wait_for(lambda: etcd_healthy(etcd), 30)
    passwords = {"superuser": secrets.token_hex(16), "replication": secrets.token_hex(16), "attestd": secrets.token_hex(16)}
    nodes.extend(PatroniNode(work, "pg%d" % i, etcd_hosts, passwords) for i in (1, 2))
    if os.geteuid() == 0:
        subprocess.run(["chown", "-R", "postgres:", work], check=True)
    nodes[0].start()
    wait_for(lambda: nodes[0].role() == "leader", 60)
    nodes[1].start()
    formed = wait_for(lambda: leader_and_sync(nodes), 90)
    tally.check(healthy and formed, "1: three etcd members healthy; Patroni made one leader and one synchronous standby "
                "(deploy/patroni/config.yml as shipped)", "roles %s" % roles(nodes))
    return passwords, formed


def scraped_rules(tally, work, nodes, etcd):
    """deploy/patroni/patroni-alerts.yml against this cluster: every metric a rule names is in a
    live Patroni's (leader and standby) or etcd member's /metrics (scripts/lib/check_alerts.py)."""
    scrape = os.path.join(work, "patroni-metrics.txt")
    with open(scrape, "w") as out:
        for url in ["http://%s:%d/metrics" % (HOST, node.rest) for node in nodes] + ["http://%s:%d/metrics" % (HOST, etcd[0].client)]:
            with urllib.request.urlopen(url, timeout=5) as answer:
                out.write(answer.read().decode())
    checked = subprocess.run(
        ["/usr/bin/python3", os.path.join(ROOT, "scripts/lib/check_alerts.py"), "--rules", os.path.join(ROOT, "deploy/patroni/patroni-alerts.yml"),
         "--tests", os.path.join(ROOT, "deploy/patroni/patroni-alerts.test.yml"), "--metrics", scrape,
         "--runbook", os.path.join(ROOT, "docs/OPERATIONS.md")], capture_output=True, text=True, timeout=60)
    tally.absorb(checked.stdout)
    tally.check(checked.returncode == 0, "1: deploy/patroni/patroni-alerts.yml names only metrics this Patroni and etcd export",
                checked.stderr[-300:])


def attestd_nodes(args, work, nodes, passwords, root):
    uri = "postgresql://attestd:%s@%s/attestd?target_session_attrs=read-write" % (
        passwords["attestd"], ",".join("%s:%d" % (HOST, node.port) for node in nodes))
    servers = [Attestd(os.path.join(args.bin, "attestd"), os.path.join(work, "attestd%d.log" % index),
                       ["--db", uri, "--threads", "2", "--address-rate", "0", "--trust-anchor", root],
                       stdout=subprocess.DEVNULL, start_seconds=30) for index in range(2)]
    return uri, servers


def recovered_after(answers, servers, since):
    """Per node, seconds from `since` to its first refresh answered 200 after its first refusal
    (a request in flight at `since` may still have been answered 200); None: never."""
    result = {}
    for server in servers:
        mine = [a for a in answers if a["port"] == server.port and a["at"] >= since * 1000]
        refused = [a["at"] for a in mine if a["status"] != 200]
        start = min(refused) if refused else since * 1000
        served = [a["at"] / 1000 for a in mine if a["step"] == "refresh" and a["status"] == 200 and a["at"] > start]
        result[server.port] = min(served) - since if served else None
    return result


def allowed(answer):
    if answer["status"] == 200:
        return True
    if answer["status"] == 503:
        return answer.get("retry_after") is not None
    return answer["status"] == 401 and answer.get("reason") == "challenge_unknown" and answer["step"] in ("attest", "refresh")


def fmt(seconds):
    return "never" if seconds is None else "%.1f" % seconds


def challenge_ok(port, client_id):
    """A challenge is a write on the leader: 200 once a node writes again."""
    return request(port, "POST", "/v1/challenge", body={"client_id": client_id}, timeout=5)[0] == 200


def lose_leader_and_wait(nodes, servers, client_id):
    """(a): the leader's machine lost; seconds until both attestd nodes write again (None: not within ttl + 5)."""
    leader = leader_of(nodes)
    lost_at = time.time()
    leader.lose_machine()
    back = wait_for(lambda: all(challenge_ok(s.port, client_id) for s in servers), TTL + 5, step=0.25)
    return leader, (time.time() - lost_at if back else None), lost_at


def rejoin(node, nodes):
    """The lost host back: Patroni rewinds it and it follows as the synchronous standby."""
    node.start()
    return wait_for(lambda: leader_and_sync(nodes), 90)


def patronictl(node, *arguments):
    command = as_postgres(["env", "-i"] + ["%s=%s" % item for item in node.env.items()]
                          + ["patronictl", "-c", os.path.join(node.work, "config.yml")] + list(arguments))
    return subprocess.run(command, capture_output=True, text=True, timeout=60)


def start_trace(args, work, name, servers, client_id, state, seconds):
    path = os.path.join(work, name + ".jsonl")
    out = open(path, "w")
    process = subprocess.Popen(
        [os.path.join(args.bin, "attest-load"), "trace", "--port", ",".join(str(s.port) for s in servers), "--client-id",
         client_id, "--app-id", APP_ID, "--state", state, "--connections", str(DEVICES), "--seconds", str(seconds)],
        stdout=out, stderr=subprocess.DEVNULL)
    return process, path


def check_revocation(tally, args, servers, uri, tokens):
    """(b): a token revoked after the failover is refused at once by both nodes; another still authorizes."""
    revoked, kept = tokens[0], tokens[-1]
    done = subprocess.run([os.path.join(args.bin, "attestctl"), "token", "revoke", revoked, "--db", uri, "--actor", "check-ha"],
                          capture_output=True, text=True, timeout=30)
    statuses = [request(s.port, "GET", "/v1/authorize", headers={"Authorization": "Bearer " + t})[0]
                for t in (revoked, kept) for s in servers]
    tally.check(done.returncode == 0 and statuses == [401, 401, 200, 200],
                "b: a token revoked right after the failover is refused at once on both nodes; another still authorizes",
                "attestctl exit %d, authorize %s" % (done.returncode, statuses))


def scenario(args, work, tally):
    etcd, nodes, servers = [], [], []
    try:
        passwords, formed = cluster(work, tally, etcd, nodes)
        if formed:
            scraped_rules(tally, work, nodes, etcd)
        if not formed:
            return
        leader = leader_of(nodes)
        psql(leader, passwords["superuser"], "CREATE ROLE attestd LOGIN PASSWORD '%s'" % passwords["attestd"])
        psql(leader, passwords["superuser"], "CREATE DATABASE attestd OWNER attestd")
        attestctl = os.path.join(args.bin, "attestctl")
        state, root = os.path.join(work, "simulator"), os.path.join(work, "simulator-root.pem")
        subprocess.run([attestctl, "simulate", "--state", state, "--write-trust-anchor", root], check=True, timeout=60,
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        uri, servers = attestd_nodes(args, work, nodes, passwords, root)
        tally.check(all(s.started() for s in servers), "2: two attestd nodes serve on the multi-host URI (target_session_attrs=read-write)")
        client_id = create_integration(attestctl, uri, "ws_ha", "ha", "ABCDE12345", "com.example.app", extra=("--environment", "production"))
        if args.leader_losses:
            return leader_losses(tally, nodes, servers, client_id, args.leader_losses)
        # Tokens for (b), minted before the failover by a short trace of its own.
        early, early_path = start_trace(args, work, "early", servers, client_id, state, 3)
        early.wait(timeout=60)
        early_tokens = [a["token"] for a in answers_in(early_path) if a["step"] in ("attest", "refresh") and a["status"] == 200]
        load, path = start_trace(args, work, "trace", servers, client_id, state, 150)
        time.sleep(5)
        lost, recovery, lost_at = lose_leader_and_wait(nodes, servers, client_id)
        tally.check(recovery is not None, "a: the leader's machine lost (kill -9 of Patroni and postmaster): both nodes write "
                    "again in %s s, with no human (limit ttl + 5 = %d s)" % (fmt(recovery), TTL + 5))
        check_revocation(tally, args, servers, uri, early_tokens)
        rejoined = rejoin(lost, nodes)
        tally.check(rejoined, "c: the lost host, started again, rewinds and follows as the synchronous standby", "%s" % roles(nodes))
        switch_at = time.time()
        current, candidate = leader_of(nodes), next(n for n in nodes if n.role() == "sync")
        switched = patronictl(current, "switchover", "--leader", current.name, "--candidate", candidate.name, "--force")
        back = wait_for(lambda: leader_of(nodes) is candidate and all(challenge_ok(s.port, client_id) for s in servers),
                        SWITCHOVER_LIMIT, step=0.25)
        switch_took = time.time() - switch_at
        tally.check(switched.returncode == 0 and back, "c: patronictl switchover: both nodes write on the new leader in %.1f s "
                    "(limit %d s)" % (switch_took, SWITCHOVER_LIMIT), switched.stdout[-300:] + switched.stderr[-300:])
        windows = etcd_losses(etcd, nodes)
        logs = [os.path.join(work, name) for name in os.listdir(work) if name.startswith("pg") and name.endswith(".log")]
        tally.check(any("failsafe mode is enabled" in open(log).read() for log in logs),
                    "e: without etcd quorum Patroni logged that the leader goes on under its failsafe (every member reachable)")
        standby = next(n for n in nodes if n is not candidate)
        wait_for(lambda: standby.role() == "sync", 60)
        standby_at = time.time()
        standby.lose_machine()
        resumed = wait_for(lambda: all(challenge_ok(s.port, client_id) for s in servers)
                           and psql(candidate, passwords["superuser"], "SHOW synchronous_standby_names") == [""], 30, step=0.5)
        tally.check(resumed, "d: the synchronous standby lost: Patroni empties synchronous_standby_names and writes resume "
                    "in %.1f s, with no human" % (time.time() - standby_at))
        stop_load(load)
        judge(tally, answers_in(path), servers, passwords, candidate, lost_at, windows)
    finally:
        for server in servers:
            server.stop()
        for node in nodes:
            node.stop()
        for member in etcd:
            member.kill()


def etcd_losses(etcd, nodes):
    """(e): one member of three lost for 8 s, then a second one for ttl seconds (no quorum: Patroni's failsafe),
    then both back. Returns the two windows."""
    first = time.time()
    etcd[2].kill()
    time.sleep(8)
    second = time.time()
    etcd[1].kill()
    # Longer than loop_wait + 2 x retry_timeout: Patroni has noticed, and acted, by the end.
    time.sleep(TTL)
    ended = time.time()
    etcd[1], etcd[2] = etcd[1].restarted(), etcd[2].restarted()
    wait_for(lambda: etcd_healthy(etcd) and leader_of(nodes) is not None, 60)
    return (first, second), (second, ended)


def stop_load(load):
    load.send_signal(signal.SIGINT)
    try:
        load.wait(timeout=10)
    except subprocess.TimeoutExpired:
        load.kill()
        load.wait()


def answers_in(path):
    """The trace's answers; a last line cut by the load's stop is left out."""
    answers = []
    with open(path) as f:
        for line in f:
            try:
                answers.append(json.loads(line))
            except ValueError:
                pass
    return answers


def judge(tally, answers, servers, passwords, leader, lost_at, windows):
    """What the devices saw over the whole run."""
    wrong = [a for a in answers if not allowed(a)]
    slowest = max((a["ms"] for a in answers), default=0)
    tally.check(len(answers) > 200 and not wrong and slowest < 15000,
                "a-e: every answer was 200, 503 with Retry-After, or 401 challenge_unknown (%d answers, slowest %d ms)"
                % (len(answers), slowest), "%d others, e.g. %s" % (len(wrong), wrong[:3]))
    minted = [a for a in answers if a["step"] in ("attest", "refresh") and a["status"] == 200]
    stored = set(psql(leader, passwords["superuser"], "SELECT encode(token_hash, 'hex') FROM tokens", database="attestd"))
    missing = [a for a in minted if hashlib.sha256(a["token"].encode()).hexdigest() not in stored]
    before = [a for a in minted if a["at"] < lost_at * 1000][-50:]
    refused = [a for a in before for s in servers
               if request(s.port, "GET", "/v1/authorize", headers={"Authorization": "Bearer " + a["token"]})[0] != 200]
    tally.check(len(before) >= 10 and not missing and not refused,
                "a-e: every token answered 200 (%d) is on the last leader; the last %d minted before the leader was lost "
                "authorize on both nodes" % (len(minted), len(before)),
                "%d missing, %d refused" % (len(missing), len(refused)))
    back = recovered_after(answers, servers, lost_at)
    tally.check(all(b is not None and b <= TTL + 5 for b in back.values()),
                "a: each node refreshed devices again within ttl + 5 s of the leader's loss (%s)"
                % ", ".join(":%d %s s" % (p, fmt(b)) for p, b in back.items()))
    one, two = windows
    during = [a for a in answers if one[0] * 1000 <= a["at"] - a["ms"] and a["at"] <= one[1] * 1000]
    tally.check(len(during) >= 10 and all(a["status"] == 200 for a in during),
                "e: one etcd member of three lost: all %d answers meanwhile 200" % len(during),
                "%s" % sorted(set(a["status"] for a in during)))
    quorumless = [a for a in answers if two[0] * 1000 <= a["at"] - a["ms"] and a["at"] <= two[1] * 1000]
    kinds = sorted(set(a["status"] for a in quorumless))
    tally.check(len(quorumless) >= 10 and all(allowed(a) for a in quorumless),
                "e: two etcd members of three lost (no quorum): %d answers, statuses %s; the leader stays read-write under "
                "Patroni's failsafe while it reaches the standby's Patroni, and every refusal is a 503 with Retry-After"
                % (len(quorumless), kinds))
    print("check-ha: without etcd quorum: %d of %d answers 200" % (sum(a["status"] == 200 for a in quorumless), len(quorumless)))


def leader_losses(tally, nodes, servers, client_id, count):
    """The leader lost `count` times, each time back as the standby; prints the median and worst recovery."""
    times = []
    for _ in range(count):
        lost, recovery, _ = lose_leader_and_wait(nodes, servers, client_id)
        times.append(recovery)
        if not rejoin(lost, nodes):
            break
    measured = [t for t in times if t is not None]
    tally.check(len(measured) == count, "a x%d: both nodes wrote again after every leader loss, within ttl + 5 s" % count,
                "recoveries: %s" % [fmt(t) for t in times])
    if measured:
        print("check-ha: recovery after %d leader losses: median %.1f s, worst %.1f s (%s)" % (
            len(measured), statistics.median(measured), max(measured), ", ".join(fmt(t) for t in times)))


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--bin", required=True)
    parser.add_argument("--leader-losses", type=int, default=0)
    args = parser.parse_args()
    # Readable by the postgres user, who runs Patroni and PostgreSQL in it.
    run_check("check-ha", lambda tally, work: scenario(args, work, tally), mode=0o755)


if __name__ == "__main__":
    main()
