#!/usr/bin/env python3
"""Prints the README's demo ("See it work in a minute") as two shell scripts, so that
scripts/check readme-demo runs its commands exactly as written: `server` the line that starts
attestd (scripts/run ...), `client` every other command, in order. Backslash-continued lines stay
one command.

    python3 scripts/lib/check_readme_demo.py README.md server|client
"""

import sys


def demo_block(readme):
    lines = open(readme).read().split("\n")
    start = lines.index("### See it work in a minute")
    fence = next(i for i in range(start, len(lines)) if lines[i].startswith("```sh"))
    end = next(i for i in range(fence + 1, len(lines)) if lines[i].startswith("```"))
    return lines[fence + 1:end]


def commands(block):
    """Whole commands: comments and blank lines dropped, continuation lines joined."""
    out, pending = [], ""
    for line in block:
        if not pending and (not line.strip() or line.lstrip().startswith("#")):
            continue
        pending += line.rstrip("\\").rstrip() + " " if line.endswith("\\") else line
        if not line.endswith("\\"):
            out.append(pending.strip())
            pending = ""
    return out


def main():
    readme, part = sys.argv[1], sys.argv[2]
    all_commands = commands(demo_block(readme))
    server = [c for c in all_commands if c.startswith("scripts/run ")]
    client = [c for c in all_commands if not c.startswith("scripts/run ")]
    if len(server) != 1:
        sys.exit("readme_demo: expected exactly one `scripts/run` line in the demo, found %d" % len(server))
    print("\n".join(server if part == "server" else client))


if __name__ == "__main__":
    main()
