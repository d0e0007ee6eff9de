#!/usr/bin/env python3
"""The checks of scripts/check alerts that need more than a shell: reads the alerting rules, their
promtool unit tests, a /metrics scrape of a fresh attestd and docs/OPERATIONS.md, and prints one
`PASS: name` or `FAIL: name: why` line per check (scripts/lib/attestd_testlib.py's Tally; scripts/check alerts
counts them).

    python3 scripts/lib/check_alerts.py --rules deploy/prometheus/attestd-alerts.yml \\
        --tests deploy/prometheus/attestd-alerts.test.yml --metrics scrape.txt --runbook docs/OPERATIONS.md

Checks:
- every metric an alert expression names is in the scrape with `# HELP` and `# TYPE` lines, which
  come before any sample of it (the scrape is taken before attestd has served a request, so this
  shows they are there before the first event). A histogram's _bucket, _sum and _count map to
  its base name. `up` is made by Prometheus itself and is not looked for.
- a metric under rate(), irate() or increase() is a counter (or a histogram's _bucket/_sum/_count);
  one under delta(), deriv() or predict_linear() is a gauge.
- every alert has `severity` page or ticket, a `summary` and a `runbook` annotation, and the
  runbook's anchor is a heading of the runbook document.
- every alert is expected to fire in at least one test of the unit-test file, and that file tests
  these rules.
"""

import argparse
import os
import re
import sys

import yaml

sys.dont_write_bytecode = True  # no __pycache__ in the checkout
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # scripts/lib/
from attestd_testlib import Tally  # noqa: E402

# Series Prometheus records itself for every scrape target: never in /metrics.
PROMETHEUS_SERIES = {"up"}

KEYWORDS = {
    "and", "or", "unless", "by", "without", "on", "ignoring", "group_left", "group_right", "bool",
    "offset", "inf", "nan",
}  # fmt: skip
AGGREGATIONS = {
    "sum", "avg", "count", "min", "max", "stddev", "stdvar", "topk", "bottomk", "quantile",
    "count_values", "group",
}  # fmt: skip
LABEL_LIST_KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right"}
COUNTER_FUNCTIONS = {"rate", "irate", "increase", "resets"}
GAUGE_FUNCTIONS = {"delta", "idelta", "deriv", "predict_linear"}
HISTOGRAM_SUFFIXES = ("_bucket", "_sum", "_count")

TOKEN = re.compile(
    r"""\s+|\#[^\n]*|"(?:\\.|[^"\\])*"|'(?:\\.|[^'\\])*'|`[^`]*`"""
    r"""|(?P<ident>[A-Za-z_:][A-Za-z0-9_:]*)|(?P<punct>[(){}\[\],])"""
    r"""|[0-9][0-9a-zA-Z_.+-]*|\.[0-9]+|[-+*/%^=!<>~]+""",
)


def metric_selectors(expr):
    """The metric names an expression selects, each with the function that directly wraps it
    (None when there is none): [(name, function), ...]."""
    tokens = []
    position = 0
    while position < len(expr):
        match = TOKEN.match(expr, position)
        if not match:
            raise ValueError(f"cannot read the expression at {expr[position:position + 20]!r}")
        position = match.end()
        if match.group("ident"):
            tokens.append(("ident", match.group("ident")))
        elif match.group("punct"):
            tokens.append(("punct", match.group("punct")))
        elif match.group(0).strip() and not match.group(0).startswith("#"):
            tokens.append(("other", match.group(0)))
    found = []
    stack = []  # one entry per open "(": the function name, or None
    depth_braces = depth_brackets = 0
    skip_label_list = False
    for index, (kind, text) in enumerate(tokens):
        following = tokens[index + 1] if index + 1 < len(tokens) else ("", "")
        if kind == "punct":
            if text == "{":
                depth_braces += 1
            elif text == "}":
                depth_braces -= 1
            elif text == "[":
                depth_brackets += 1
            elif text == "]":
                depth_brackets -= 1
            elif text == "(":
                previous = tokens[index - 1] if index > 0 else ("", "")
                if previous[0] == "ident" and previous[1] in LABEL_LIST_KEYWORDS:
                    skip_label_list = True
                    stack.append(None)
                elif previous[0] == "ident" and previous[1] not in KEYWORDS:
                    stack.append(previous[1])
                else:
                    stack.append(None)
            elif text == ")":
                if stack:
                    stack.pop()
                skip_label_list = False
            continue
        if kind != "ident" or depth_braces or depth_brackets or skip_label_list:
            continue
        if text in KEYWORDS or following == ("punct", "("):
            continue
        if text in AGGREGATIONS and following[0] == "ident" and following[1] in ("by", "without"):
            continue
        found.append((text, stack[-1] if stack else None))
    return found


def read_scrape(path):
    """{family: {"help": line number, "type": (line number, type), "first_sample": line number}}."""
    families = {}
    with open(path, encoding="utf-8") as file:
        for number, line in enumerate(file, start=1):
            line = line.rstrip("\n")
            if line.startswith("# HELP ") or line.startswith("# TYPE "):
                parts = line.split(" ", 3)
                if len(parts) < 4:
                    continue
                entry = families.setdefault(parts[2], {})
                if parts[1] == "HELP":
                    entry.setdefault("help", number)
                else:
                    entry.setdefault("type", (number, parts[3].strip()))
            elif line and not line.startswith("#"):
                name = re.match(r"[A-Za-z_:][A-Za-z0-9_:]*", line).group(0)
                family = name
                for suffix in HISTOGRAM_SUFFIXES:
                    base = name[: -len(suffix)]
                    if name.endswith(suffix) and families.get(base, {}).get("type", (0, ""))[1] in ("histogram", "summary"):
                        family = base
                families.setdefault(family, {}).setdefault("first_sample", number)
    return families


def family_of(name, families):
    """The family a selected name belongs to, its TYPE, and whether it is a histogram part."""
    if "type" in families.get(name, {}):
        return name, families[name]["type"][1], False
    for suffix in HISTOGRAM_SUFFIXES:
        base = name[: -len(suffix)]
        if name.endswith(suffix) and families.get(base, {}).get("type", (0, ""))[1] in ("histogram", "summary"):
            return base, families[base]["type"][1], True
    return None, None, False


def github_anchor(heading):
    anchor = heading.strip().lower()
    anchor = re.sub(r"[^\w\- ]", "", anchor)
    return anchor.replace(" ", "-")


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rules", required=True)
    parser.add_argument("--tests", required=True)
    parser.add_argument("--metrics", required=True, help="a /metrics scrape of a fresh attestd")
    parser.add_argument("--runbook", required=True, help="the document the runbook annotations point into")
    arguments = parser.parse_args()
    tally = Tally()

    with open(arguments.rules, encoding="utf-8") as file:
        rules = yaml.safe_load(file)
    with open(arguments.tests, encoding="utf-8") as file:
        tests = yaml.safe_load(file)
    with open(arguments.runbook, encoding="utf-8") as file:
        anchors = {github_anchor(line.lstrip("#")) for line in file if re.match(r"#{1,6} ", line)}
    families = read_scrape(arguments.metrics)

    # Which alerts name which metrics, and under which functions.
    alerts = []
    uses = {}  # metric -> {"alerts": [...], "functions": set(), "groups": set()}
    for group in rules.get("groups", []):
        for rule in group.get("rules", []):
            name = rule.get("alert") or rule.get("record")
            if "alert" in rule:
                alerts.append((group["name"], rule))
            try:
                selectors = metric_selectors(str(rule.get("expr", "")))
            except ValueError as error:
                tally.check(False, f"{name}: expression readable", str(error))
                continue
            for metric, function in selectors:
                use = uses.setdefault(metric, {"alerts": [], "functions": set(), "groups": set()})
                if name not in use["alerts"]:
                    use["alerts"].append(name)
                use["functions"].add(function)
                use["groups"].add(group["name"])
    tally.check(bool(alerts), f"{arguments.rules} has alerts", "no alerting rules found")

    for metric in sorted(uses):
        use = uses[metric]
        used_by = ", ".join(use["alerts"])
        if metric in PROMETHEUS_SERIES:
            print(f"(note) {metric} ({used_by}): recorded by Prometheus for each target, not looked for in /metrics", file=sys.stderr)
            continue
        family, kind, histogram_part = family_of(metric, families)
        entry = families.get(family or metric, {})
        pending = " (attestd does not export it yet: rule group " + ", ".join(sorted(use["groups"])) + ")"
        if family is None:
            why = "not in /metrics" if not entry else "no # TYPE line"
            tally.check(False, f"/metrics has {metric} with # HELP and # TYPE (used by {used_by})",
                        why + (pending if any("pending" in g for g in use["groups"]) else ""))
            continue
        first_sample = entry.get("first_sample")
        in_order = "help" in entry and (first_sample is None or (entry["help"] < first_sample and entry["type"][0] < first_sample))
        tally.check(in_order, f"/metrics has {metric} with # HELP and # TYPE (used by {used_by})",
                    "no # HELP line" if "help" not in entry else "# HELP or # TYPE comes after its first sample")
        if use["functions"] & COUNTER_FUNCTIONS:
            ok = kind == "counter" or (histogram_part and kind in ("histogram", "summary"))
            tally.check(ok, f"{metric} is a counter where rate()/increase() read it", f"# TYPE is {kind}")
        if use["functions"] & GAUGE_FUNCTIONS:
            tally.check(kind == "gauge", f"{metric} is a gauge where delta()/deriv() read it", f"# TYPE is {kind}")

    # Labels and annotations the on-call doc and the routing rely on; a runbook section for each.
    for _, rule in alerts:
        name = rule["alert"]
        labels = rule.get("labels") or {}
        annotations = rule.get("annotations") or {}
        runbook = str(annotations.get("runbook", ""))
        anchor = runbook.split("#", 1)[1] if "#" in runbook else ""
        problems = []
        if labels.get("severity") not in ("page", "ticket"):
            problems.append(f"severity {labels.get('severity')!r}, not page or ticket")
        if not annotations.get("summary"):
            problems.append("no summary annotation")
        if not runbook.startswith(os.path.relpath(arguments.runbook) + "#"):
            problems.append(f"runbook {runbook!r} does not point into {arguments.runbook}")
        elif anchor not in anchors:
            problems.append(f"{arguments.runbook} has no heading for #{anchor}")
        tally.check(not problems, f"{name}: severity, summary and a runbook section", "; ".join(problems))

    # Each alert shown firing by the unit tests, and the tests are of this file.
    tested_files = {os.path.normpath(os.path.join(os.path.dirname(arguments.tests), f)) for f in tests.get("rule_files", [])}
    tally.check(os.path.normpath(arguments.rules) in tested_files, f"{arguments.tests} tests {arguments.rules}",
                f"its rule_files are {sorted(tested_files)}")
    firing = set()
    for test in tests.get("tests", []):
        for case in test.get("alert_rule_test", []) or []:
            if case.get("exp_alerts"):
                firing.add(case.get("alertname"))
    for _, rule in alerts:
        tally.check(rule["alert"] in firing, f"{rule['alert']}: a unit test shows it firing",
                    f"no alert_rule_test in {arguments.tests} expects it to fire")
    return 1 if tally.failed else 0


if __name__ == "__main__":
    sys.exit(main())
