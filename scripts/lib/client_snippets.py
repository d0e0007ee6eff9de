"""The Swift blocks of a Markdown file, for scripts/check apple-client.

--extract DOC DIR   writes block N (from 1, in order) to DIR/N/main.swift
--check-fences DOC  fails when a fence is left open (a block that would silently not be checked)
"""
import os
import sys


def blocks(text):
    """(first line number, code) of each ```swift block."""
    found, current, start = [], None, 0
    for number, line in enumerate(text.splitlines(), 1):
        stripped = line.strip()
        if current is None and stripped.startswith("```"):
            current, start = ([] if stripped == "```swift" else None), number
            if current is None:
                current = False  # another language: skipped, but its fence still has to close
        elif current is not None and stripped == "```":
            if current is not False:
                found.append((start, "\n".join(current) + "\n"))
            current = None
        elif current not in (None, False):
            current.append(line)
    return found, current is not None


def main(argv):
    if len(argv) == 3 and argv[1] == "--check-fences":
        _, open_fence = blocks(open(argv[2]).read())
        if open_fence:
            sys.exit("%s: a ``` fence is never closed" % argv[2])
        return 0
    if len(argv) == 4 and argv[1] == "--extract":
        found, _ = blocks(open(argv[2]).read())
        for index, (line, code) in enumerate(found, 1):
            folder = os.path.join(argv[3], "%d-line-%d" % (index, line))
            os.makedirs(folder)
            with open(os.path.join(folder, "main.swift"), "w") as out:
                out.write(code)
        print("%d swift blocks in %s" % (len(found), argv[2]), file=sys.stderr)
        return 0
    sys.exit(__doc__)


if __name__ == "__main__":
    sys.exit(main(sys.argv))
