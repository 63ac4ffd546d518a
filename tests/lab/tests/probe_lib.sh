# Helpers for the RDMA probe lab tests: rocectl against a node's
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

# has_mr NODE MINLEN: an MR of at least MINLEN bytes on NODE's rxe0 (a
# bandwidth probe's buffer is 128 KiB, a 2-byte latency probe's 4 KiB: how a
# test sees that its probe is running among scheduled ones).
has_mr() { lx "$1" rdma res show mr | awk -v m="$2" '{for (i = 1; i < NF; i++) if ($i == "mrlen" && $(i + 1) >= m) f = 1} END {exit !f}'; }
# wait_mr NODE BYTES PID WHAT [SECS]: until NODE holds an MR of at least
# BYTES (the probe WHAT, run by the background PID, has its endpoint up);
# fails when PID ends first or after SECS (default 15).
wait_mr() {
  local deadline=$((SECONDS + ${5:-15}))
  until has_mr "$1" "$2"; do
    kill -0 "$3" 2>/dev/null || fail "$4 ended before its MR showed on $1"
    ((SECONDS < deadline)) || fail "$4: its MR never showed on $1"
    sleep 0.2
  done
}
# idle_res NODE: rxe0's counts (res_counts) once no probe is on it (no MR;
# the scheduled probes of the other nodes come and go), within 20 s.
idle_res() {
  local c deadline=$((SECONDS + 20))
  while :; do
    c=$(res_counts "$1") || fail "rdma res show on $1 failed"
    [[ $c == *" mr=0 "* ]] && { echo "$c"; return; }
    ((SECONDS < deadline)) || fail "$1: rxe0 never idle: $c"
    sleep 0.5
  done
}
# res_back NODE WANT SECS: waits up to SECS for NODE's rxe0 counts to be
# WANT; exits 1 if they are not.
res_back() {
  local deadline=$((SECONDS + $3))
  until [[ $(res_counts "$1") == "$2" ]]; do
    ((SECONDS < deadline)) || return 1
    sleep 0.5
  done
}
# res_detail NODE: rxe0's QPs (but the GSI one) and MRs, one line each, for
# failure messages.
res_detail() { lsh "$1" 'rdma res show qp link rxe0/1 | grep -v " type GSI " || true; rdma res show mr || true'; }
