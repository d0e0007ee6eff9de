"""Part 5, soak: simulated devices for a bounded time, RSS and open descriptors sampled."""

import re
import subprocess
import threading
import time

from attestd_testlib import exit_status, fd_count

from .tools import rss_kb, sim_failures, sim_requests

# More devices than the device-key cache holds (PublicKeyCache's 10,000), for the long soak's fill.
SOAK_FILL_DEVICES = 10500


def part(run):
    o, t = run.o, run.tally
    print("== 5. soak: %d s of simulated devices, RSS and descriptors every %d s" % (o.soak_seconds, o.sample_every))
    label = "soak"
    db, csv_path, simlog = run.path("soak-0.sqlite"), run.path("soak-0.csv"), run.path("soak-0-sim.txt")
    # --purge-interval 5: the purge (which deleted nothing before 2137a07 made it stop trapping) runs under load.
    server = run.start_attestd(db, "--address-rate", "0", "--attest-rate", "0", "--purge-interval", "5")
    pid = server.pid
    cid = run.new_integration(db, "soak")
    time.sleep(1)
    base_fd, base_rss = fd_count(pid), rss_kb(pid)
    open(simlog, "w").close()
    fill_note = ""
    if not o.quick:
        # Fill every cache first: the device-key cache holds 10,000 keys, and a device enters it on its
        # first refresh. The soak then runs past the point where every cache is full, so flat RSS
        # means a plateau, not a cache still filling (the soak adds about 18 new devices a second).
        print("   %s: filling the device-key cache: %d devices that attest and refresh once" % (label, SOAK_FILL_DEVICES))
        began = time.monotonic()
        with open(simlog, "ab") as out:
            rc = subprocess.run(run.simulate_args(server.port, cid, "--devices", str(SOAK_FILL_DEVICES), "--refreshes", "1",
                                                  "--concurrency", "8"), stdout=out, stderr=subprocess.STDOUT, timeout=1200).returncode
            out.write(b"exit %d\n" % rc)
        fill_note = "; cache filled with %d devices in %d s (RSS %d kB)" % (SOAK_FILL_DEVICES, time.monotonic() - began, rss_kb(pid))
        print("  " + fill_note[1:])
    t0 = int(time.time())
    deadline = t0 + o.soak_seconds

    def load():  # repeated bounded runs: 32 new devices each, 50 refreshes per device, 8 threads
        while time.time() < deadline and server.running():
            with open(simlog, "ab") as out:
                proc = subprocess.Popen(run.simulate_args(server.port, cid, "--devices", "32", "--refreshes", "50",
                                                          "--concurrency", "8"), stdout=out, stderr=subprocess.STDOUT)
                try:
                    rc = proc.wait(timeout=300)
                except subprocess.TimeoutExpired:
                    proc.terminate()
                    proc.wait()
                    rc = 124
                out.write(b"exit %d\n" % rc)

    loader = threading.Thread(target=load, daemon=True)
    loader.start()
    samples = [(0, base_rss, base_fd)]
    with open(csv_path, "w") as f:
        f.write("t_s,rss_kb,fds\n0,%d,%d\n" % (base_rss, base_fd))
    while loader.is_alive() and time.time() < deadline + 330:
        time.sleep(o.sample_every)
        now = int(time.time()) - t0
        if not server.running():
            break
        samples.append((now, rss_kb(pid), fd_count(pid)))
        with open(csv_path, "a") as f:
            f.write("%d,%d,%d\n" % samples[-1])
    loader.join(timeout=330)
    end_t = int(time.time()) - t0
    died = not server.running()
    status = exit_status(server.proc.returncode) if died else None
    time.sleep(3)
    after_fd = fd_count(pid)
    failures, requests = sim_failures(simlog), sim_requests(simlog)
    with open(simlog, errors="replace") as f:
        lines = f.read().splitlines()
    runs = sum(line.startswith("exit ") for line in lines)
    bad_runs = sum(bool(re.match(r"exit [1-9]", line)) for line in lines)
    warm_s = max(o.soak_seconds // 5, 10)
    rows = samples[1:]
    if rows:
        warm = next((r for r in rows if r[0] >= warm_s), rows[-1])
        first_rss, warm_rss, warm_t, end_rss = rows[0][1], warm[1], warm[0], rows[-1][1]
        max_rss, max_fd, last_t = max(r[1] for r in rows), max(r[2] for r in rows), rows[-1][0]
    else:
        first_rss = warm_rss = warm_t = end_rss = max_rss = max_fd = last_t = 0
    print("   %s: %d s, %d simulate runs, %d requests, %d failed steps; RSS %d kB idle, %d kB first sample, %d kB at %d s "
          "(after warm-up), %d kB at %d s, max %d kB; fds %d idle, max %d under load, %d 3 s after the load" % (
              label, end_t, runs, requests, failures, base_rss, first_rss, warm_rss, warm_t, end_rss, last_t, max_rss,
              base_fd, max_fd, after_fd))
    if died:
        text = server.log_text().splitlines()
        crash = [next((line for line in text if "Program crashed" in line), None),
                 next((line for line in text if " crashed:" in line), None)]
        t.fail("%s: attestd exited with status %s after about %s s of soak (%s)" % (
            label, status, last_t, "".join(line + " " for line in crash if line is not None)))
    else:
        t.pass_("%s: attestd ran the whole %d s" % (label, o.soak_seconds))
    t.check(failures == 0 and bad_runs == 0 and not died,
            "%s: zero errors (%d failed steps, %d of %d simulate runs exited non-zero)" % (label, failures, bad_runs, runs))
    t.check(warm_rss and end_rss <= 1.2 * warm_rss, "%s: RSS flat: %d kB at the end is within 20%% of %d kB after warm-up "
            "(max %d kB%s)" % (label, end_rss, warm_rss, max_rss, fill_note))
    t.check(not died and after_fd <= base_fd + 2, "%s: open descriptors back to the idle baseline after the load "
            "(%d idle, %d after)" % (label, base_fd, after_fd))
    if not died:
        server.stop()
