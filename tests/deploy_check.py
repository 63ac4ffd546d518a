#!/usr/bin/env python3
"""deploy/ against the tree.

  metrics    every metric a PromQL expression names in deploy/prometheus/*.yml
             (rules; the test files' input series and expression tests) and
             deploy/grafana/*.json (panel queries, variables, annotations)
             is one roced exports: a family of the golden /metrics outputs
             or a name the agent's sources spell out whole (docs_check.py
             reads both the same way), a histogram's _bucket, _sum or
             _count, a recording rule of deploy/prometheus, or Prometheus's
             own `up`. rate(), irate() and increase() take counters only
             (types from the golden outputs, else docs/metrics.md). A test
             whose input series has a misspelled name would pass along with
             a rule misspelled the same way, hence the test files too.
  runbooks   every alerting rule has an annotation runbook_url
             BASE/docs/operations.md#ANCHOR, one BASE for all, ANCHOR the
             alert's name in lower case; docs/operations.md has one section
             per alert under "## Alerts: what to do" and no other; every
             alert name README.md and docs/ mention (Roced...) is an alert.
  container  every path deploy/container/Containerfile copies from the build
             context (COPY without --from) exists, and the DaemonSet runs the
             image the Containerfile's comment tags: roced:<the project's
             version in CMakeLists.txt>.

Prints each problem and exits 1 when there is one.

Usage: deploy_check.py SOURCE_DIR
"""
import glob
import json
import os
import re
import sys

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import docs_check  # noqa: E402  (the metric families and Markdown anchors)

RUNBOOK_DOC = "docs/operations.md"
RUNBOOK_SECTION = "Alerts: what to do"
# libyaml's parser when python3-yaml has it: ten times the pure-Python one.
YAML_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or", "unless", "bool",
            "offset", "inf", "nan"}


def metric_names(expr):
    """(names, names inside rate()/irate()/increase()) of a PromQL expression."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)             # string literals
    e = re.sub(r"\{[^}]*\}", "", e)                            # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                           # ranges, subqueries
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\{?\w+\}?", " ", e)                         # dashboard variables
    names, rated = set(), set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        token = m.group(0)
        if e[m.end():].lstrip().startswith("("):                 # a function or aggregation
            continue
        if token.lower() in KEYWORDS:
            continue
        if m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] == "."):
            continue                                           # 1e-05, 0.5, 10m
        names.add(token)
    for m in re.finditer(r"\b(rate|irate|increase)\s*\(\s*([A-Za-z_:][A-Za-z0-9_:]*)", e):
        rated.add(m.group(2))
    return names, rated


def known_series(src, recorded):
    """{series name: type or None} of everything a query may name."""
    families = docs_check.metric_families(src)
    documented = docs_check.doc_rows(os.path.join(src, "docs/metrics.md"), "metrics") or []
    for _, name, mtype in documented:
        if name in families and families[name] is None:
            families[name] = mtype
    series = {"up": "gauge"}
    for name, mtype in families.items():
        series[name] = mtype
        if mtype in (None, "histogram", "summary"):
            for suffix in ("_bucket", "_sum", "_count"):
                if mtype == "summary" and suffix == "_bucket":
                    continue
                series.setdefault(name + suffix, "counter" if mtype else None)
    for name in recorded:
        series.setdefault(name, None)
    return series


def rule_files(src):
    files = sorted(glob.glob(os.path.join(src, "deploy/prometheus/*.yml")))
    return [f for f in files if not f.endswith(".test.yml") and os.path.basename(f) != "prometheus.yml"]


def load_rules(src):
    """[(file, rule dict)] of every rule in the rule files."""
    out = []
    for path in rule_files(src):
        with open(path) as f:
            doc = yaml.load(f, Loader=YAML_LOADER)
        for group in doc.get("groups", []):
            out.extend((path, rule) for rule in group.get("rules", []))
    return out


def series_name(text):
    return text.split("{", 1)[0].strip()


def prometheus_queries(src, rules):
    """(where, expr or None, series name or None) of deploy/prometheus."""
    for path, rule in rules:
        yield ("%s: %s" % (os.path.basename(path), rule.get("alert") or rule.get("record")), rule.get("expr"), None)
    for path in sorted(glob.glob(os.path.join(src, "deploy/prometheus/*.test.yml"))):
        with open(path) as f:
            doc = yaml.load(f, Loader=YAML_LOADER)
        base = os.path.basename(path)
        for test in doc.get("tests", []):
            where = "%s: test '%s'" % (base, test.get("name"))
            for s in test.get("input_series", []):
                yield (where + " input series", None, series_name(s["series"]))
            for t in test.get("promql_expr_test", []) or []:
                yield (where + " expr", t["expr"], None)
                for sample in t.get("exp_samples", []) or []:
                    if sample.get("labels") and not sample["labels"].startswith("{"):
                        yield (where + " expected sample", None, series_name(sample["labels"]))


def grafana_queries(src):
    """(where, expr) of every query in deploy/grafana/*.json."""
    for path in sorted(glob.glob(os.path.join(src, "deploy/grafana/*.json"))):
        with open(path) as f:
            dash = json.load(f)
        base = os.path.basename(path)

        def walk(panels):
            for p in panels:
                yield from walk(p.get("panels", []))
                for t in p.get("targets", []):
                    if t.get("expr"):
                        yield ('%s: panel "%s" %s' % (base, p.get("title"), t.get("refId")), t["expr"])

        yield from walk(dash.get("panels", []))
        for v in dash.get("templating", {}).get("list", []):
            if v.get("type") == "query":
                q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
                m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", q)
                yield ("%s: variable $%s" % (base, v["name"]), m.group(1) if m else q)
        for a in dash.get("annotations", {}).get("list", []):
            if a.get("expr"):
                yield ('%s: annotation "%s"' % (base, a.get("name")), a["expr"])


def check_metrics(src, rules, problems):
    recorded = {rule["record"] for _, rule in rules if "record" in rule}
    series = known_series(src, recorded)
    checked = 0
    queries = [(w, e, n) for w, e, n in prometheus_queries(src, rules)]
    queries += [(w, e, None) for w, e in grafana_queries(src)]
    for where, expr, name in queries:
        names, rated = metric_names(expr) if expr else ({name}, set())
        checked += 1
        for n in sorted(names - series.keys()):
            problems.append("%s: %s is not a metric roced exports" % (where, n))
        for n in sorted(rated):
            if series.get(n) not in (None, "counter"):
                problems.append("%s: rate/increase of %s, which is a %s" % (where, n, series[n]))
    return checked


def runbook_sections(src):
    """The level-3 headings under the runbook section of docs/operations.md."""
    heads, inside = [], False
    with open(os.path.join(src, RUNBOOK_DOC)) as f:
        for line in f:
            if line.startswith("## "):
                inside = line[3:].strip() == RUNBOOK_SECTION
            elif inside and line.startswith("### "):
                heads.append(line[4:].strip())
    return heads


def check_runbooks(src, rules, problems):
    anchors = docs_check.heading_anchors(os.path.join(src, RUNBOOK_DOC))
    bases = set()
    alerts = set()
    for path, rule in rules:
        alert = rule.get("alert")
        if not alert:
            continue
        alerts.add(alert)
        where = "%s: %s" % (os.path.basename(path), alert)
        url = (rule.get("annotations") or {}).get("runbook_url")
        m = re.fullmatch(r"(https?://\S+/)%s#([a-z0-9_-]+)" % re.escape(RUNBOOK_DOC), url or "")
        if not m:
            problems.append("%s: runbook_url %r is not BASE/%s#ANCHOR" % (where, url, RUNBOOK_DOC))
            continue
        bases.add(m.group(1))
        if m.group(2) != alert.lower():
            problems.append("%s: runbook anchor #%s, not #%s" % (where, m.group(2), alert.lower()))
        if m.group(2) not in anchors:
            problems.append("%s: %s has no section #%s" % (where, RUNBOOK_DOC, m.group(2)))
    if len(bases) > 1:
        problems.append("runbook_url: more than one base: %s" % ", ".join(sorted(bases)))
    for doc in [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md"))):
        with open(doc) as f:
            for number, line in enumerate(f, 1):
                for name in re.findall(r"\bRoced[A-Z][A-Za-z]+\b", line):
                    if name not in alerts:
                        problems.append("%s:%d: %s is not an alert of deploy/prometheus" %
                                        (os.path.relpath(doc, src), number, name))
    sections = runbook_sections(src)
    if not sections:
        problems.append("%s: no '## %s' section with a '### ALERT' per alert" % (RUNBOOK_DOC, RUNBOOK_SECTION))
    for head in sections:
        if head not in alerts:
            problems.append("%s: runbook '### %s' is for no alert of deploy/prometheus" % (RUNBOOK_DOC, head))
    return len(alerts)


def check_container(src, problems):
    path = os.path.join(src, "deploy/container/Containerfile")
    if not os.path.exists(path):
        problems.append("deploy/container/Containerfile: missing")
        return 0
    with open(path) as f:
        text = re.sub(r"\\\n", " ", f.read())
    copied = 0
    for line in text.split("\n"):
        words = line.split()
        if not words or words[0].upper() != "COPY" or any(w.startswith("--from") for w in words):
            continue
        for source in [w for w in words[1:-1] if not w.startswith("--")]:
            copied += 1
            if not os.path.exists(os.path.join(src, source)):
                problems.append("deploy/container/Containerfile: COPY %s: no such path in the tree" % source)
    if copied == 0:
        problems.append("deploy/container/Containerfile: copies nothing from the build context")
    with open(os.path.join(src, "CMakeLists.txt")) as f:
        version = re.search(r"project\(roced VERSION ([0-9.]+)", f.read()).group(1)
    want = "roced:" + version
    if not re.search(r"^#.* -t %s \.$" % re.escape(want), text, flags=re.M):
        problems.append("deploy/container/Containerfile: no build command tagging %s in its comment" % want)
    with open(os.path.join(src, "deploy/kubernetes/daemonset.yaml")) as f:
        images = [c.get("image") for doc in yaml.load_all(f, Loader=YAML_LOADER) if doc and doc.get("kind") == "DaemonSet"
                  for c in doc["spec"]["template"]["spec"]["containers"]]
    for image in images:
        if image != want:
            problems.append("deploy/kubernetes/daemonset.yaml: image %s, the Containerfile builds %s" % (image, want))
    return copied


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip().split("\n")[-1], file=sys.stderr)
        return 2
    src = argv[1]
    problems = []
    rules = load_rules(src)
    queries = check_metrics(src, rules, problems)
    alerts = check_runbooks(src, rules, problems)
    copied = check_container(src, problems)
    for p in problems:
        print("deploy_check: " + p)
    if problems:
        return 1
    print("deploy_check: deploy/ matches the tree (%d queries and series, %d alerts with runbooks, "
          "%d paths the Containerfile copies)" % (queries, alerts, copied))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
