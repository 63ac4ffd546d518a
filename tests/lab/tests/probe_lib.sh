# Helpers for the RDMA probe lab tests (issue 5): rocectl against a node's
# agent from the lab namespace, and the node's generated config (probes.peers
# = the other nodes) put back when another test left a different one (the
# reconcile tests leave node1 with a config that manages nothing).
# Sourced, not run; sources lib.sh.
# shellcheck shell=bash
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TEST_NAME=$(basename "$0" .sh)
require_lab
((AGENT)) || skip "the lab was brought up without the agent (binaries not built: ${ROCED_BIN:-?})"
PROBE_NS=$("$LAB" netns)

# pctl NODE ARGS...: rocectl against NODE's agent.
pctl() {
  local node=$1
  shift
  ip netns exec "$PROBE_NS" "$ROCECTL_BIN" --target "$("$LAB" addr "$node"):7471" --timeout 30s "$@"
}

# probe_prepare NODE...: each node's agent answers and has probes.peers.
probe_prepare() {
  local node status peers
  for node in "$@"; do
    "$LAB" agent status "$node" >/dev/null 2>&1 || "$LAB" agent start "$node" >/dev/null ||
      fail "$node: roced is not running and does not start"
    status=$(pctl "$node" -o json status) || fail "$node: rocectl status failed"
    peers=$(json_get "$status" "len(j['config']['desired'].get('probes', {}).get('peers', []))")
    if ((peers == 0)); then
      log "$node: accepted config has no probes.peers (left by another test); applying the lab's"
      pctl "$node" apply -f "$("$LAB" logdir "$node")/roced.yaml" >/dev/null ||
        fail "$node: could not apply the lab's generated config"
    fi
  done
}

# qp_count NODE: queue pairs on rxe0 (the GSI QP included).
qp_count() { lsh "$1" 'rdma res show qp link rxe0/1 | grep -c lqpn || true'; }

# metrics NODE: the node's /metrics text.
metrics() {
  ip netns exec "$PROBE_NS" "$PY" -c '
import sys, urllib.request
print(urllib.request.urlopen(f"http://{sys.argv[1]}:9471/metrics", timeout=20).read().decode())' \
    "$("$LAB" addr "$1")"
}

# res_counts NODE: rxe0's verbs resources as "qp=N cq=N mr=N pd=N" (from
# `rdma -j res show`, the kernel's restrack counts; the GSI QP included).
res_counts() {
  local j
  j=$(lx "$1" rdma -j res show) || return 1
  "$PY" -c '
import json, sys
d = next((e for e in json.loads(sys.argv[1]) if e.get("ifname") == "rxe0"), None)
if d is None:
    sys.exit("no rxe0 in rdma res show")
print(" ".join(f"{k}={int(d[k])}" for k in ("qp", "cq", "mr", "pd")))' "$j"
}
