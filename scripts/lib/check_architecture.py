"""One picture of the target graph: Package.swift's dependencies, the modules each target's sources
import, and the "may import" column of docs/ARCHITECTURE.md must agree, and each C library is
imported by exactly one Swift target. Run by scripts/test before the build; prints every
disagreement and exits 1 when there is one.
"""

import glob
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
KINDS = r"\.(target|executableTarget|testTarget|systemLibrary|plugin)\("


def top_level_items(text, start):
    """The items of the bracketed list opening at text[start] ("["), split at its top-level commas."""
    depth, item, items, index = 0, "", [], start
    in_string = False
    while index < len(text):
        char = text[index]
        if in_string:
            item += char
            if char == "\\":
                item += text[index + 1]
                index += 1
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
            item += char
        elif char in "[(":
            depth += 1
            if depth > 1:
                item += char
        elif char in "])":
            depth -= 1
            if depth == 0:
                items.append(item.strip())
                return [i for i in items if i]
            item += char
        elif char == "," and depth == 1:
            items.append(item.strip())
            item = ""
        elif char == "/" and text.startswith("//", index):
            index = text.index("\n", index)
            continue
        else:
            item += char
        index += 1
    raise ValueError("unbalanced brackets in Package.swift")


def package_targets():
    """{name: (kind, set of dependencies, set of conditional dependencies)} from Package.swift's
    targets array. A dependency is a string ("AttestCore") or `.target(name:condition:)` /
    `.byName(name:condition:)`; one with a `condition:` is also in the third set."""
    with open(os.path.join(ROOT, "Package.swift")) as f:
        text = f.read()
    arguments = top_level_items(text, text.index("(", text.index("Package(")))
    listed = [argument for argument in arguments if argument.startswith("targets:")]
    if len(listed) != 1:
        raise ValueError("Package.swift: Package(...) has no targets argument")
    targets = {}
    for item in top_level_items(listed[0], listed[0].index("[")):
        kind = re.match(r"\.(target|executableTarget|testTarget|systemLibrary|plugin)\(", item)
        if not kind:
            raise ValueError("Package.swift: cannot read the target %r" % item[:60])
        name = re.search(r'name:\s*"([^"]+)"', item).group(1)
        dependencies, conditional = set(), set()
        listed = re.search(r"dependencies:\s*\[", item)
        if listed:
            for dependency in top_level_items(item, listed.end() - 1):
                dependency_name = re.search(r'"([^"]+)"', dependency).group(1)
                dependencies.add(dependency_name)
                if "condition:" in dependency:
                    conditional.add(dependency_name)
        path = re.search(r'path:\s*"([^"]+)"', item)
        targets[name] = (kind.group(1), dependencies, conditional, path.group(1) if path else None)
    return targets


def imports(directory, modules, conditional=()):
    """The modules of this package that the Swift files under `directory` import, and the
    `conditional` ones imported outside any `#if` (which would break the platforms the
    dependency's condition leaves out)."""
    found, unguarded = set(), set()
    pattern = re.compile(r"^\s*(?:@\w+\s+)?(?:(?:package|internal|public|private|fileprivate)\s+)?import\s+(\w+)")
    for path in glob.glob(os.path.join(directory, "**", "*.swift"), recursive=True):
        depth = 0
        with open(path) as f:
            for line in f:
                stripped = line.strip()
                if stripped.startswith("#if"):
                    depth += 1
                elif stripped.startswith("#endif"):
                    depth -= 1
                match = pattern.match(line)
                if match and match.group(1) in modules:
                    found.add(match.group(1))
                    if depth == 0 and match.group(1) in conditional:
                        unguarded.add("%s (%s)" % (match.group(1), os.path.relpath(path, ROOT)))
    return found, unguarded


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


def readme_layout(targets):
    """Disagreements between Sources/ on disk, Package.swift's paths and the README's layout table: a row
    `Sources/<Group>/` per group on disk, naming exactly the targets whose path is in that group."""
    rows = {}
    with open(os.path.join(ROOT, "README.md")) as f:
        for line in f:
            match = re.match(r"\| `Sources/([^/`]+)/` \|(.*)\|\s*$", line)
            if match:
                rows[match.group(1)] = set(re.findall(r"`([^`]+)`", match.group(2)))
    on_disk = {group: {target: (kind, path) for target, (kind, _, _, path) in targets.items()
                       if path and path.startswith("Sources/%s/" % group)}
               for group in sorted(os.listdir(os.path.join(ROOT, "Sources")))}
    problems = []
    for group, members in on_disk.items():
        if group not in rows:
            problems.append("README.md's layout table has no row for Sources/%s/" % group)
            continue
        for target in sorted(set(members) - rows[group]):
            problems.append("README.md's row for Sources/%s/ does not name %s" % (group, target))
        for name in sorted(rows[group] & set(targets) - set(members)):
            problems.append("README.md's row for Sources/%s/ names %s, which is elsewhere" % (group, name))
    for group in sorted(set(rows) - set(on_disk)):
        problems.append("README.md's layout table has a row for Sources/%s/, which does not exist" % group)
    for name, (kind, _, _, path) in sorted(targets.items()):
        if kind != "testTarget" and not path:
            problems.append("%s has no path: in Package.swift (every source target names its group's folder)" % name)
    return problems


def main():
    targets = package_targets()
    modules = set(targets)
    docs = documented()
    problems = []
    importers = {}
    for name, (kind, dependencies, conditional, path) in sorted(targets.items()):
        if kind in ("systemLibrary", "plugin"):
            continue
        relative = path or os.path.join("Tests" if kind == "testTarget" else "Sources", name)
        directory = os.path.join(ROOT, relative)
        if not os.path.isdir(directory):
            problems.append("%s: no directory %s" % (name, relative))
            continue
        used, unguarded = imports(directory, modules, conditional)
        for module in sorted(unguarded):
            problems.append("%s imports %s outside #if, but depends on it only under a condition" % (name, module))
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
    for name, (kind, _, _, _) in sorted(targets.items()):
        if kind == "systemLibrary" and len(importers.get(name, ())) != 1:
            problems.append("%s is imported by %s, not by exactly one Swift target" % (name, ", ".join(sorted(importers.get(name, ()))) or "none"))
    problems += readme_layout(targets)
    for problem in problems:
        print("check-architecture: " + problem, file=sys.stderr)
    print("check-architecture: %d targets, %s" % (len(targets), "%d disagreements" % len(problems) if problems else "one picture"),
          file=sys.stderr)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
