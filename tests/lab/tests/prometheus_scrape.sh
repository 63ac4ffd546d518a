#!/usr/bin/env bash
# A real Prometheus server (Debian's `prometheus`) in the lab namespace,
# configured from the shipped deploy/prometheus/prometheus.yml (targets
# replaced by the lab's nodes, intervals shortened) with the shipped alert
# rules, scrapes every node; the series are read back through its HTTP API:
# every node is up, its rxe0 port is ACTIVE with hw counters labelled by
# device/port/netdev, PFC pause counters of eth0 are there, and every alert
# rule loaded and evaluates.
source "$(dirname "$0")/lib.sh"
require_lab
command -v prometheus >/dev/null || skip "the prometheus package is not installed (scripts/setup-deps.sh installs it)"
NS=$("$LAB" netns)
REPO_DIR=$(cd "$TESTS_DIR/../../.." && pwd)
NODES=$("$LAB" status 2>/dev/null | grep -c '^node[0-9]' || true)
((NODES >= 2)) || NODES=2
tmp=$(mktemp -d "/tmp/$TEST_NAME.XXXXXX")
prom_pid=""
cleanup() {
  [[ -n $prom_pid ]] && kill "$prom_pid" 2>/dev/null && wait "$prom_pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

targets=()
for ((i = 1; i <= NODES; i++)); do targets+=("$("$LAB" addr "node$i"):9471"); done
"$PY" - "$REPO_DIR/deploy/prometheus/prometheus.yml" "$REPO_DIR/deploy/prometheus/roced-alerts.yml" \
  "$tmp" "${targets[@]}" <<'PY' || fail "could not derive the lab's Prometheus config"
import sys, yaml
src, rules, tmp, *targets = sys.argv[1:]
cfg = yaml.safe_load(open(src))
cfg["global"]["scrape_interval"] = "1s"
cfg["global"]["evaluation_interval"] = "1s"
cfg["rule_files"] = [rules]
job = next(j for j in cfg["scrape_configs"] if j["job_name"] == "roced")
job["scrape_interval"] = "1s"
job["scrape_timeout"] = "1s"
# The shipped file_sd path, pointed at a file listing the lab's nodes.
job["file_sd_configs"] = [{"files": [f"{tmp}/targets/*.yml"], "refresh_interval": "5s"}]
job["static_configs"] = []
import os
os.makedirs(f"{tmp}/targets")
yaml.safe_dump([{"targets": targets, "labels": {"lab": "roced"}}], open(f"{tmp}/targets/lab.yml", "w"))
yaml.safe_dump(cfg, open(f"{tmp}/prometheus.yml", "w"))
PY
promtool check config "$tmp/prometheus.yml" >"$tmp/check.out" 2>&1 || fail "promtool check config: $(cat "$tmp/check.out")"

ip netns exec "$NS" prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
  --web.listen-address=127.0.0.1:9090 --log.level=warn >"$tmp/prometheus.log" 2>&1 &
prom_pid=$!

# query EXPR: the API's result list as JSON.
query() {
  ip netns exec "$NS" "$PY" -c 'import json, sys, urllib.parse, urllib.request
u = "http://127.0.0.1:9090/api/v1/" + sys.argv[1]
r = json.load(urllib.request.urlopen(u, timeout=10))
assert r["status"] == "success", r
print(json.dumps(r["data"]))' "$1"
}
q() { query "query?query=$("$PY" -c 'import sys, urllib.parse; print(urllib.parse.quote(sys.argv[1]))' "$1")"; }

deadline=$((SECONDS + 90))
while :; do
  kill -0 "$prom_pid" 2>/dev/null || fail "prometheus exited: $(tail -5 "$tmp/prometheus.log")"
  up=$(q 'sum(up{job="roced"})' 2>/dev/null | "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(int(float(d["result"][0]["value"][1])) if d["result"] else 0)' 2>/dev/null || echo 0)
  [[ $up == "$NODES" ]] && break
  ((SECONDS < deadline)) || fail "after 90 s, $up of $NODES targets are up: $(query targets 2>&1 | head -c 2000)"
  sleep 1
done
log "all $NODES targets up after $((SECONDS)) s"

"$PY" - "$NODES" "$(q 'roced_build_info')" "$(q 'roced_port_state{device="rxe0",port="1"} == 1')" \
  "$(q 'count by (instance, node, device, port, netdev) (roced_rdma_hw_counters_total{device="rxe0"})')" \
  "$(q 'count by (instance) (roced_pfc_pause_frames_received_total{netdev="eth0"})')" \
  "$(q 'roced_port_transmit_packets_total{device="rxe0",port="1",netdev="eth0"}')" <<'PY' || fail "series read back from Prometheus are wrong (above)"
import json, sys
n = int(sys.argv[1])
build, state, hw, pause, tx = (json.loads(a)["result"] for a in sys.argv[2:])
errors = []
def per_instance(res, what):
    inst = {r["metric"].get("instance") for r in res}
    if len(inst) != n:
        errors.append(f"{what}: {len(inst)} instances, want {n}: {res}")
per_instance(build, "roced_build_info")
per_instance(state, "roced_port_state rxe0/1")
for r in state:
    if r["metric"].get("state", "").lower() != "active":
        errors.append(f"rxe0/1 is not ACTIVE: {r['metric']}")
per_instance(hw, "hw counters of rxe0")
for r in hw:
    m = r["metric"]
    if (m.get("port"), m.get("netdev")) != ("1", "eth0") or not m.get("node"):
        errors.append(f"hw counter labels: {m}")
    if float(r["value"][1]) < 5:
        errors.append(f"only {r['value'][1]} generic hw counters on {m.get('instance')}")
per_instance(pause, "per-priority pause counters of eth0")
for r in pause:
    if float(r["value"][1]) != 8:
        errors.append(f"{r['metric']['instance']}: {r['value'][1]} priorities, want 8")
per_instance(tx, "roced_port_transmit_packets_total rxe0")
for e in errors:
    print("  " + e)
sys.exit(1 if errors else 0)
PY

# The shipped alert rules loaded and evaluate without errors.
rules=$(query rules) || fail "GET /api/v1/rules failed"
"$PY" - "$rules" <<'PY' || fail "alert rules did not all load and evaluate (above)"
import json, sys, time
groups = json.loads(sys.argv[1])["groups"]
rules = [r for g in groups for r in g["rules"]]
bad = [r for r in rules if r.get("health") not in ("ok", "unknown")]
for r in bad:
    print(f"  {r['name']}: {r.get('health')} {r.get('lastError')}")
print(f"{len(rules)} rules in {len(groups)} group(s)")
sys.exit(1 if bad or not rules else 0)
PY
sleep 2
rules=$(query rules)
nrules=$("$PY" -c 'import json,sys; g=json.loads(sys.argv[1])["groups"]; r=[x for y in g for x in y["rules"]]; bad=[x["name"] for x in r if x.get("health")!="ok"]; print(len(r) if not bad else "unhealthy: " + ",".join(bad))' "$rules")
[[ $nrules =~ ^[0-9]+$ ]] || fail "rules after two evaluation rounds: $nrules"
pass "Prometheus scraped $NODES nodes; rxe0 hw counters (device/port/netdev), eth0 PFC counters and port state read back through its API; $nrules alert rules evaluate"
