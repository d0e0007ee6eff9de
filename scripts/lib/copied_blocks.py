"""Copied blocks: the pairs of places in a set of source files that share a run of six or more lines,
for the copied-block bound of check_bounds.py (python3 standard library).

    python3 scripts/lib/copied_blocks.py FILE...    lists the pairs among FILEs

How a pair is found (calibrated against the `duplicates` tool, which reads the same way):
  - every line is normalised: white space stripped and folded; blank lines, comment-only lines,
    lone punctuation (`}`, `})`, ...) and import lines dropped, and a trailing // comment;
  - and reduced to its shape: string literals, numbers and names (not keywords) replaced by
    placeholders, so that a block copied and renamed still matches;
  - a run is 6 or more consecutive normalised lines of the same shapes in two places (two files,
    or two places of one file that do not overlap), as long as it goes on both sides; a run whose
    first 6 lines stand in more than 8 places is too common to be a copy (boilerplate) and is left
    out;
  - a run of fewer than 3 different shapes (a list of enum cases, a switch of one-line cases)
    is a pattern, not a copy, and is left out;
  - a pair is two files (or one file with itself) that share at least one run, counted once
    however many runs they share; it is shown with its longest run, `exact` when that run is the
    same to the letter and `shape` when only its shapes agree, and `+N more runs`.

Calibration (2026-12-07, Sources/ as it was then, generated files aside): this finds 18 pairs,
`duplicates --repo Sources --most 200` 19 (21 with the two generated files), 14 of them the same.
With exact lines only (no shapes) it found 2; with keywords made placeholders too, 24; without
the three-shape rule, 33 (the other 15 were lists of enum cases and switch arms).
"""

import itertools
import re
import sys

MIN_LINES = 6
MOST_PLACES = 8
MIN_SHAPES = 3

KEYWORDS = frozenset("""
    actor any as associatedtype async await borrowing break case catch class consuming continue
    convenience default defer deinit didSet do dynamic else enum extension fallthrough false
    fileprivate final for func get guard if import in indirect init inout internal is lazy let
    mutating nil nonisolated nonmutating open operator optional override package private
    protocol public repeat required rethrows return self Self sending set some static struct
    subscript super switch throw throws true try typealias unowned var weak where while willSet
    const void int char unsigned signed long short typedef sizeof return struct define ifdef ifndef
    endif include
""".split())
TOKEN = re.compile(r'"(?:\\.|[^"\\])*"|\d[\d_]*(?:\.\d+)?|[A-Za-z_][A-Za-z0-9_]*|\S')
LONE_PUNCTUATION = re.compile(r"[{}()\[\];,.]+")
IMPORT = re.compile(r"^(@\w+\s+)*((public|internal|package|private|fileprivate)\s+)?import\s|^#\s*include\b")


def strip_trailing_comment(line):
    """The line without a // comment that follows code (one inside a string literal stays)."""
    quoted = False
    for index, char in enumerate(line):
        if char == '"' and (index == 0 or line[index - 1] != "\\"):
            quoted = not quoted
        elif not quoted and line.startswith("//", index):
            return line[:index].rstrip()
    return line


def shape(line):
    parts = []
    for token in TOKEN.findall(line):
        if token.startswith('"'):
            parts.append('"S"')
        elif token[0].isdigit():
            parts.append("0")
        elif token[0].isalpha() or token[0] == "_":
            parts.append(token if token in KEYWORDS else "x")
        else:
            parts.append(token)
    return " ".join(parts)


def normalise(lines):
    """[(line number, the line normalised, its shape)] of the lines that count."""
    kept, in_comment = [], False
    for number, raw in enumerate(lines, 1):
        line = raw.strip()
        if in_comment:
            if "*/" not in line:
                continue
            in_comment, line = False, line.split("*/", 1)[1].strip()
        if line.startswith("/*"):
            if "*/" not in line:
                in_comment = True
                continue
            line = line.split("*/", 1)[1].strip()
        line = " ".join(strip_trailing_comment(line).split())
        if not line or line.startswith("//") or LONE_PUNCTUATION.fullmatch(line.replace(" ", "")) or IMPORT.match(line):
            continue
        kept.append((number, line, shape(line)))
    return kept


def runs_between(first, second, i, j, same_file):
    """The run that starts at first[i] and second[j], or None when it is not the start of one."""
    if same_file and i + MIN_LINES > j:
        return None  # the two places would overlap
    if i > 0 and j > 0 and first[i - 1][2] == second[j - 1][2] and (not same_file or i - 1 + MIN_LINES <= j - 1):
        return None  # it began a line earlier
    length = MIN_LINES
    while (i + length < len(first) and j + length < len(second) and first[i + length][2] == second[j + length][2]
           and (not same_file or i + length < j)):
        length += 1
    if len({first[i + k][2] for k in range(length)}) < MIN_SHAPES:
        return None  # a list of one or two shapes (enum cases, a switch's one-line cases): a pattern
    exact = all(first[i + k][1] == second[j + k][1] for k in range(length))
    return length, exact


def copied_block_pairs(files):
    """The pairs among files ({path: lines}): [(path a, path b, [(lines, exact, first a, last a, first b, last b)])],
    each pair's runs longest first, the pairs sharing most first."""
    normalised = {path: normalise(lines) for path, lines in files.items()}
    places = {}
    for path, kept in normalised.items():
        for index in range(len(kept) - MIN_LINES + 1):
            key = tuple(entry[2] for entry in kept[index:index + MIN_LINES])
            places.setdefault(key, []).append((path, index))
    pairs = {}
    for found in places.values():
        if len(found) < 2 or len(found) > MOST_PLACES:
            continue
        for (path_a, i), (path_b, j) in itertools.combinations(sorted(found), 2):
            first, second = normalised[path_a], normalised[path_b]
            run = runs_between(first, second, i, j, path_a == path_b)
            if run is None:
                continue
            length, exact = run
            pairs.setdefault((path_a, path_b), []).append(
                (length, exact, first[i][0], first[i + length - 1][0], second[j][0], second[j + length - 1][0]))
    listed = []
    for (path_a, path_b), runs in pairs.items():
        runs.sort(key=lambda run: (-run[0], not run[1], run[2]))
        listed.append((path_a, path_b, runs))
    listed.sort(key=lambda pair: (-pair[2][0][0], not pair[2][0][1], pair[0], pair[1]))
    return listed


def format_pair(number, pair):
    """`D1 a.swift:10-24 ~ b.swift:40-54 (12 lines, exact) (+2 more runs)`."""
    path_a, path_b, runs = pair
    length, exact, first_a, last_a, first_b, last_b = runs[0]
    more = len(runs) - 1
    return "D%d %s:%d-%d ~ %s:%d-%d (%d lines, %s)%s" % (
        number, path_a, first_a, last_a, path_b, first_b, last_b, length, "exact" if exact else "shape",
        " (+%d more run%s)" % (more, "s" if more > 1 else "") if more else "")


if __name__ == "__main__":
    found = copied_block_pairs({path: open(path, encoding="utf-8", errors="replace").read().splitlines() for path in sys.argv[1:]})
    print("%d pairs" % len(found))
    for index, pair in enumerate(found):
        print(format_pair(index + 1, pair))
