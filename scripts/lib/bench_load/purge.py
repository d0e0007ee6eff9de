"""Loads beside a purge of expiring tokens, and beside a busy disk."""

import os
import re
import subprocess
import time

from .tools import APP_ID, load


class Purge:
    def purge_under_load(self, db, sql_runner, seconds=30):
        """100,000 tokens expiring at once, deleted by the purge (every second here) while wrk
        checks a live token and attest-load asks for challenges (writes); then the same load beside
        100,000 tokens that expire in ten hours, nothing to purge: the reference (this load alone
        fills both cores, and its own tail is tens of milliseconds at 10 M tokens).
        Returns (authorize p99, challenge p99, rows the purge removed, the reference's authorize
        p99, the reference's challenge p99)."""
        authorize, challenge, removed = self.load_beside_tokens(db, sql_runner, 3, seconds)
        reference_authorize, reference_challenge, _ = self.load_beside_tokens(db, sql_runner, 36000, seconds)
        return authorize, challenge, removed, reference_authorize, reference_challenge

    def load_beside_tokens(self, db, sql_runner, expires_in, seconds):
        """One node purging every second, 100,000 tokens expiring `expires_in` s from now, and the load."""
        ports = self.start(db, 1, ["--purge-interval", "1"])
        client_id = self.integration(db)
        attest_load = os.path.join(self.bin, "attest-load")
        token = self.token(ports[0], client_id)
        # Issued an hour before they expire: the insert may start seconds after this line (a
        # large file), and a token issued after its expiry breaks the tables' CHECK.
        sql_runner(client_id, int(time.time()) + expires_in)
        wrk_run = subprocess.Popen(["wrk", "-t1", "-c32", "-d%ds" % seconds, "--latency", "-H", "Authorization: Bearer " + token,
                                    "http://127.0.0.1:%d/v1/authorize" % ports[0]], stdout=subprocess.PIPE, text=True)
        challenges = load(attest_load, "challenge", ports, client_id, self.state, 4, seconds)
        out = wrk_run.communicate(timeout=seconds + 60)[0]
        log = self.nodes[0].log_text()
        self.stop()
        removed = sum(int(m) for m in re.findall(r'"msg":"purged expired rows","rows":(\d+)', log))
        return re.search(r"\s99%\s+(\S+)", out).group(1), challenges["p99_ms"] + "ms", removed

    def checks_beside_a_busy_disk(self, db, megabytes, seconds=40):
        """One node: wrk checks one live token (answered from memory) while attest-load asks for
        challenges (4 connections, an insert each); from the 5th second dd writes `megabytes` MiB
        to this run's directory, buffered, and flushes them (conv=fsync): the disk the store's
        files, the node's log and the database server's WAL are on. Returns (authorize p99, the
        longest check, checks/s, challenge p99, the seconds dd took)."""
        ports = self.start(db, 1)
        client_id = self.integration(db)
        token = self.token(ports[0], client_id)
        wrk_run = subprocess.Popen(["wrk", "-t1", "-c32", "-d%ds" % seconds, "--latency", "-H", "Authorization: Bearer " + token,
                                    "http://127.0.0.1:%d/v1/authorize" % ports[0]], stdout=subprocess.PIPE, text=True)
        challenges = subprocess.Popen([os.path.join(self.bin, "attest-load"), "challenge", "--port", str(ports[0]), "--client-id",
                                       client_id, "--app-id", APP_ID, "--state", self.state, "--connections", "4", "--seconds",
                                       str(seconds)], stdout=subprocess.PIPE, text=True)
        time.sleep(5)
        hog = os.path.join(self.work, "busy-disk")
        began = time.monotonic()
        if megabytes:
            subprocess.run(["dd", "if=/dev/zero", "of=" + hog, "bs=1M", "count=%d" % megabytes, "conv=fsync"], check=True,
                           stderr=subprocess.DEVNULL, timeout=600)
        took = time.monotonic() - began
        out = wrk_run.communicate(timeout=seconds + 600)[0]
        challenge_out = dict(line.split(" ", 1) for line in challenges.communicate(timeout=60)[0].strip().splitlines() if " " in line)
        self.stop()
        if megabytes:
            os.remove(hog)
        return (re.search(r"\s99%\s+(\S+)", out).group(1), re.search(r"Latency\s+\S+\s+\S+\s+(\S+)", out).group(1),
                float(re.search(r"Requests/sec:\s+([0-9.]+)", out).group(1)), challenge_out["p99_ms"] + "ms", took)
