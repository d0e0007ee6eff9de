"""One picture of the target graph: Package.swift's dependencies, the modules each target's sources
import, and the "may import" column of docs/ARCHITECTURE.md must agree, and each C library is
imported by exactly one Swift target. Run by scripts/test before the build; prints every
disagreement and exits 1 when there is one.
"""

import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
KINDS = r"\.(target|executableTarget|testTarget|systemLibrary|plugin)\("


def package_targets():
    """{name: (kind, set of dependencies)} from Package.swift's targets array."""
    with open(os.path.join(ROOT, "Package.swift")) as f:
        text = f.read()
    text = text[text.index("targets: ["):]
    starts = [(m.start(), m.group(1)) for m in re.finditer(KINDS, text)]
    targets = {}
    for index, (start, kind) in enumerate(starts):
        end = starts[index + 1][0] if index + 1 < len(starts) else len(text)
        block = text[start:end]
        name = re.search(r'name:\s*"([^"]+)"', block).group(1)
        listed = re.search(r"dependencies:\s*\[(.*?)\]", block, re.S)
        targets[name] = (kind, set(re.findall(r'"([^"]+)"', listed.group(1))) if listed else set())
    return targets


def imports(directory, modules):
    """The modules of this package that the Swift files under `directory` import."""
    found = set()
    pattern = re.compile(r"^\s*(?:@\w+\s+)?(?:(?:package|internal|public|private|fileprivate)\s+)?import\s+(\w+)")
    for path in glob.glob(os.path.join(directory, "**", "*.swift"), recursive=True):
        with open(path) as f:
            for line in f:
                match = pattern.match(line)
                if match and match.group(1) in modules:
                    found.add(match.group(1))
    return found


def documented():
    """{target: set of modules} from the table of docs/ARCHITECTURE.md ("may import", "-" for none)."""
    table = {}
    with open(os.path.join(ROOT, "docs", "ARCHITECTURE.md")) as f:
        for line in f:
            cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
            if len(cells) < 4 or not cells[0].startswith("`"):
                continue
            for name in re.findall(r"`([^`]+)`", cells[0]):
                table[name] = set(re.findall(r"`([^`]+)`", cells[-1]))
    return table


def main():
    targets = package_targets()
    modules = set(targets)
    docs = documented()
    problems = []
    importers = {}
    for name, (kind, dependencies) in sorted(targets.items()):
        if kind in ("systemLibrary", "plugin"):
            continue
        base = "Tests" if kind == "testTarget" else "Sources"
        directory = os.path.join(ROOT, base, name)
        if not os.path.isdir(directory):
            problems.append("%s: no directory %s/%s" % (name, base, name))
            continue
        used = imports(directory, modules)
        for module in used:
            if targets[module][0] == "systemLibrary":
                importers.setdefault(module, set()).add(name)
        if used - dependencies:
            problems.append("%s imports %s without depending on it in Package.swift" % (name, ", ".join(sorted(used - dependencies))))
        plugins_and_tools = {d for d in dependencies if targets.get(d, ("",))[0] == "plugin" or d not in targets}
        if dependencies - used - plugins_and_tools:
            problems.append("%s depends on %s in Package.swift but never imports it" % (name, ", ".join(sorted(dependencies - used))))
        if kind != "testTarget":
            if name not in docs:
                problems.append("%s has no row in docs/ARCHITECTURE.md" % name)
            elif docs[name] != dependencies:
                problems.append("docs/ARCHITECTURE.md says %s may import %s; Package.swift says %s" % (
                    name, ", ".join(sorted(docs[name])) or "-", ", ".join(sorted(dependencies)) or "-"))
    for name, (kind, _) in sorted(targets.items()):
        if kind == "systemLibrary" and len(importers.get(name, ())) != 1:
            problems.append("%s is imported by %s, not by exactly one Swift target" % (name, ", ".join(sorted(importers.get(name, ()))) or "none"))
    for problem in problems:
        print("check-architecture: " + problem, file=sys.stderr)
    print("check-architecture: %d targets, %s" % (len(targets), "%d disagreements" % len(problems) if problems else "one picture"),
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
