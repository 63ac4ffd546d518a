#!/usr/bin/env bash
# Every PromQL query in deploy/grafana/roced.json (panel targets, template
# variables, annotations) names only metrics that exist: those a real roced
# exports on the fixture tree (scraped here), plus the explicit list below
# of names that a fixture scrape cannot show (each must be a metric name the
# agent's source spells out, and none may be one the scrape shows, so the
# list cannot hide a renamed metric or outlive its reason). Also: every
# panel has a query,
# and rate()/increase() are applied to counters only.
# Usage: grafana_dashboard.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
WORK=$(mktemp -d /tmp/roced-dash.XXXXXX)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }

# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"
METRICS_PORT=$(free_port)
start_fixture_agent "$METRICS_PORT"
# Scraped once the start-up reconcile pass has run (its series exist then).
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" >"$WORK/metrics.txt" &&
    grep -q '^roced_converged ' "$WORK/metrics.txt" && break
  sleep 0.1
done
[ -s "$WORK/metrics.txt" ] || { echo "FAIL - no scrape"; exit 1; }

# Names a scrape of roced on the fixture tree does not show, each with why.
cat >"$WORK/extra.txt" <<'EOF'
# Prometheus adds this one to every target.
up gauge
# ethtool statistics and the PFC watchdog: only on the live /sys (the
# fixture's netdevs are not the running kernel's). Their names are pinned
# by counter_collector_test and pfc_watchdog_test.
roced_pfc_pause_frames_received_total counter
roced_pfc_pause_frames_sent_total counter
roced_pfc_pause_received_duration_seconds_total counter
roced_pfc_pause_sent_duration_seconds_total counter
roced_pfc_pause_transitions_total counter
roced_netdev_tc_buffer_discards_total counter
roced_netdev_tc_congestion_discards_total counter
roced_netdev_tc_ecn_marked_packets_total counter
roced_netdev_link_pause_frames_received_total counter
roced_netdev_link_pause_frames_sent_total counter
roced_netdev_receive_discards_total counter
roced_pfc_tx_pause_storm_warnings_total counter
roced_pfc_tx_pause_storm_errors_total counter
roced_pfc_storm gauge
roced_pfc_storm_events_total counter
# Probes: series exist once a probe ran (labels peer, device/kind/reason);
# the names are pinned by probe_runtime_test.
roced_probe_latency_seconds histogram
roced_probe_bandwidth_bits_per_second gauge
roced_probe_failures_total counter
roced_probe_last_success_timestamp_seconds gauge
EOF

check "every query in roced.json names only metrics roced exports, and rates only counters" \
  python3 - "$SRC/deploy/grafana/roced.json" "$WORK/metrics.txt" "$WORK/extra.txt" "$SRC" <<'PY'
import json, os, re, sys

dash_path, scrape_path, extra_path, src = sys.argv[1:5]

# Every metric name the agent's code spells out as a string literal: an
# allow-listed name must be one of them, so renaming a metric in the code
# fails this test until the dashboard (and the list) follow.
literals = set()
for top in ("lib", "agent"):
    for dirpath, _, files in os.walk(os.path.join(src, top)):
        for f in files:
            if f.endswith((".cc", ".h")):
                literals.update(re.findall(r'"(roced_[a-z0-9_]+)"', open(os.path.join(dirpath, f)).read()))

types = {}  # metric family name -> type
for line in open(scrape_path):
    m = re.match(r"# TYPE (\S+) (\S+)", line)
    if m:
        types[m.group(1)] = m.group(2)
scraped = set(types)
problems = []
for line in open(extra_path):
    line = line.strip()
    if line and not line.startswith("#"):
        name, kind = line.split()
        if name in scraped:
            problems.append(f"allow-list: {name} is scraped from the fixture; drop it from the list")
        elif name != "up" and name not in literals:
            problems.append(f"allow-list: {name} is not a metric name in lib/ or agent/ (renamed?)")
        types.setdefault(name, kind)

# Series names each family exposes.
series = {}
for name, kind in types.items():
    if kind == "histogram":
        for s in ("_bucket", "_sum", "_count"):
            series[name + s] = "counter"
    elif kind == "summary":
        for s in ("_sum", "_count"):
            series[name + s] = "counter"
        series[name] = "gauge"
    else:
        series[name] = kind

KEYWORDS = {"by", "without", "on", "ignoring", "group_left", "group_right", "and", "or",
            "unless", "bool", "offset", "inf", "nan", "le"}

def metric_names(expr):
    """(names, names inside rate()/increase()) of a PromQL expression."""
    e = re.sub(r'"(?:[^"\\]|\\.)*"', '""', expr)        # string literals
    e = re.sub(r"\{[^}]*\}", "", e)                       # label matchers
    e = re.sub(r"\[[^\]]*\]", "", e)                      # ranges
    e = re.sub(r"\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)", " ", e)
    e = re.sub(r"\$\{?\w+\}?", " ", e)                    # dashboard variables
    names, rated = set(), set()
    for m in re.finditer(r"[A-Za-z_:][A-Za-z0-9_:]*", e):
        tok = m.group(0)
        rest = e[m.end():].lstrip()
        if rest.startswith("("):                          # function or aggregation
            continue
        if tok.lower() in KEYWORDS or re.fullmatch(r"\d.*", tok):
            continue
        if m.start() > 0 and (e[m.start() - 1].isdigit() or e[m.start() - 1] == "."):
            continue                                      # 1e-05, 0.5 ...
        names.add(tok)
    for m in re.finditer(r"\b(rate|irate|increase)\s*\(\s*([A-Za-z_:][A-Za-z0-9_:]*)", e):
        rated.add(m.group(2))
    return names, rated

def queries(dash):
    """(where, expr) for every query in the dashboard."""
    def walk(panels):
        for p in panels:
            if p.get("type") == "row":
                yield from walk(p.get("panels", []))
                continue
            targets = p.get("targets", [])
            if not targets:
                yield (f'panel "{p.get("title")}"', None)
            for t in targets:
                yield (f'panel "{p.get("title")}" {t.get("refId")}', t.get("expr"))
    yield from walk(dash["panels"])
    for v in dash.get("templating", {}).get("list", []):
        if v.get("type") != "query":
            continue
        q = v["query"]["query"] if isinstance(v["query"], dict) else v["query"]
        m = re.fullmatch(r"\s*label_values\((.*),\s*\w+\s*\)\s*", q)
        yield (f'variable ${v["name"]}', m.group(1) if m else q)
    for a in dash.get("annotations", {}).get("list", []):
        if "expr" in a:
            yield (f'annotation "{a["name"]}"', a["expr"])

dash = json.load(open(dash_path))
checked, used = 0, set()
for where, expr in queries(dash):
    if not expr:
        problems.append(f"{where}: no query")
        continue
    checked += 1
    names, rated = metric_names(expr)
    if not names:
        problems.append(f"{where}: names no metric: {expr}")
    for n in sorted(names):
        used.add(n)
        if n not in series:
            problems.append(f"{where}: {n} is not a metric roced exports: {expr}")
    for n in sorted(rated):
        if series.get(n) != "counter":
            problems.append(f"{where}: rate/increase of {n}, which is a {series.get(n, 'unknown')}")

print(f"{checked} queries checked; {len(scraped)} families scraped from roced on the fixture tree")
print("metrics used:", ", ".join(sorted(used)))
for p in problems:
    print("FAIL -", p)
sys.exit(1 if problems else 0)
PY
echo
finish
