"""The command line of `scripts/check reliability`."""

import random
import re
import sys

USAGE = """\
usage: scripts/check reliability [--quick] [--only wire,slow,crash,busy,soak] [--cycles N] [--soak-seconds S]
                                 [--seed N] [--keep DIR]
  --quick           CI form: 4 crash cycles, a 75 s soak, no extra slow-client runs (under ~6 minutes)
  --only LIST       run only these parts (comma-separated; default all)
  --cycles N        kill -9 cycles (1-200; default 20, or 4 with --quick)
  --soak-seconds S  soak length (10-3600; default 600, or 75 with --quick)
  --seed N          seed of the random kill moments (default: random, printed)
  --keep DIR        copy the raw results (per-case table, samples, logs) to DIR
"""
PARTS = ["wire", "slow", "crash", "busy", "soak"]
HELP_SHOWN = 10  # exit status of --check-options after --help: scripts/checks/reliability stops with 0


class Options:
    pass


def parse_options(argv, checking=False):
    """The command line, as `scripts/check reliability` documents it; exits 64 (usage) on a bad one, and after --help
    with 0 (HELP_SHOWN when `checking`, so that scripts/checks/reliability stops there)."""
    o = Options()
    o.quick, o.only, o.cycles, o.soak_seconds, o.seed, o.keep = False, ",".join(PARTS), "", "", "", ""
    args = list(argv)
    while args:
        arg = args.pop(0)
        if arg in ("--only", "--cycles", "--soak-seconds", "--seed", "--keep"):
            if not args or not args[0]:
                what = {"--only": "a list", "--keep": "a directory"}.get(arg, "a number")
                print("scripts/check reliability: %s needs %s" % (arg, what), file=sys.stderr)
                sys.exit(1)
            setattr(o, arg[2:].replace("-", "_"), args.pop(0))
        elif arg == "--quick":
            o.quick = True
        elif arg in ("-h", "--help"):
            sys.stdout.write(USAGE)
            sys.exit(HELP_SHOWN if checking else 0)
        else:
            sys.stderr.write(USAGE)
            sys.exit(64)
    if o.quick:
        o.cycles, o.soak_seconds, o.sample_every = o.cycles or "4", o.soak_seconds or "75", 2
    else:
        o.cycles, o.soak_seconds, o.sample_every = o.cycles or "20", o.soak_seconds or "600", 5
    o.seed = o.seed or str(random.SystemRandom().randrange(1 << 30))

    def number_in(value, low, high, message):
        if not (re.fullmatch(r"[0-9]+", value) and low <= int(value) <= high):
            print(message, file=sys.stderr)
            sys.exit(64)
        return int(value)

    o.cycles = number_in(o.cycles, 1, 200, "--cycles takes 1 to 200")
    o.soak_seconds = number_in(o.soak_seconds, 10, 3600, "--soak-seconds takes 10 to 3600")
    o.seed = number_in(o.seed, 0, 4294967295, "--seed takes a whole number")
    o.parts = [part for part in o.only.split(",") if part]
    for part in o.parts:
        if part not in PARTS:
            print("--only: unknown part '%s'" % part, file=sys.stderr)
            sys.exit(64)
    return o
