"""The gateway check: interleaved rounds against nginx and hello, the paced p99, the revocations under
load."""

import json
import os
import re
import subprocess
import sys
import time

from .tools import REVOCATIONS, STATUS_COUNTER, check_status, paced_p99, run, wrk, wrk_share


class Gateway:
    def gateway(self, label, db, reference, hello_port, rounds, revocation_nodes=1):
        """Interleaved rounds on one node: nginx, hello, authorize, introspect; then authorize's
        p99 near half its rate and the four revocations under load, on that node and, when
        `revocation_nodes` is more, on as many nodes sharing the database. Returns a dict of figures."""
        ports = self.start(db, 1)
        client_id = self.integration(db)
        token = self.token(ports[0], client_id)
        lua = self.introspect_script(token)
        authorize_url = "http://127.0.0.1:%d/v1/authorize" % ports[0]
        bearer = ["-H", "Authorization: Bearer " + token]
        figures = {"nginx": [], "hello": [], "authorize": [], "introspect": []}
        for index in range(rounds):
            nginx = reference()
            hello = wrk(self.seconds, ["http://127.0.0.1:%d/" % hello_port])[0]
            authorize = wrk(self.seconds, [authorize_url], bearer)[0]
            introspect = wrk(self.seconds, ["http://127.0.0.1:%d/v1/introspect" % ports[0]], ["-s", lua])[0]
            for key, value in (("nginx", nginx), ("hello", hello), ("authorize", authorize), ("introspect", introspect)):
                figures[key].append(value)
            print("%s round %d: nginx %.0f hello %.0f authorize %.0f introspect %.0f" % (label, index + 1, nginx, hello, authorize,
                                                                                        introspect), file=sys.stderr, flush=True)
        peak = sorted(figures["authorize"])[len(figures["authorize"]) // 2]
        figures["paced"] = paced_p99(self.seconds, authorize_url, bearer, peak / 2, self.work)
        figures["revocation"] = {1: self.revocations_under_load(db, ports)}
        self.stop()
        if revocation_nodes > 1:  # no node answers 200 once a revocation has returned
            figures["revocation"][revocation_nodes] = self.revocations_under_load(db, self.start(db, revocation_nodes))
            self.stop()
        return figures

    def revocations_under_load(self, db, ports):
        """Each of the four revocations on its own integration while wrk checks its token on every
        node in `ports` as fast as it can. After the command returned, while that load still runs:
        50 checks on connections of their own, spread over the nodes, then one second of wrk on
        every node over 16 keep-alive connections each (spread over its HTTP threads as it accepts
        them), counting the statuses. One (command, whether a check on each node answered 200 just
        before it, milliseconds attestctl took, 401s of the 50 checks, wrk's statuses after it:
        {200, 401, other}) per revocation."""
        attestctl = os.path.join(self.bin, "attestctl")
        counter = os.path.join(self.work, "statuses.lua")
        with open(counter, "w") as f:
            f.write(STATUS_COUNTER)
        results = []
        for kind in REVOCATIONS:
            client_id = self.integration(db)
            token = self.token(ports[0], client_id)
            if kind == "integration revoke":
                command = ["integration", "revoke", client_id, "--yes"]
            elif kind == "token revoke":
                command = ["token", "revoke", token]
            elif kind == "device block":
                listed = json.loads(run([attestctl, "device", "list", "--client-id", client_id, "--json", "--db", db]))
                if len(listed) != 1:
                    raise RuntimeError("expected the one device of %s, got %r" % (client_id, listed))
                command = ["device", "block", listed[0]["key_id_hex"]]
            else:
                command = ["integration", "suspend", client_id]
            urls = ["http://127.0.0.1:%d/v1/authorize" % port for port in ports]
            bearer = ["-H", "Authorization: Bearer " + token]
            loads = [subprocess.Popen(wrk_share(self.seconds + 4, url, len(urls), bearer), stdout=subprocess.DEVNULL) for url in urls]
            try:
                time.sleep(2)
                # The token must work everywhere first, or the 401s after the command prove nothing.
                accepted = all(check_status(url, token) == 200 for url in urls)
                began = time.monotonic()
                run([attestctl, *command, "--actor", "bench", "--db", db])
                took = (time.monotonic() - began) * 1000
                refused = sum(check_status(urls[index % len(urls)], token) == 401 for index in range(50))
                after = [subprocess.Popen(["wrk", "-t1", "-c16", "-d1s", "-s", counter, url, *bearer], stdout=subprocess.PIPE, text=True)
                         for url in urls]
                statuses = {"200": 0, "401": 0, "other": 0}
                for proc in after:
                    counted = re.search(r"statuses 200=(\d+) 401=(\d+) other=(\d+)", proc.communicate(timeout=60)[0]).groups()
                    for key, value in zip(("200", "401", "other"), counted):
                        statuses[key] += int(value)
            except BaseException:
                for proc in loads:
                    proc.terminate()
                raise
            finally:
                for proc in loads:
                    proc.wait(timeout=self.seconds + 60)
            results.append((kind, accepted, took, refused, statuses))
        return results
