# Helpers for the reconcile lab tests: apply configs to node1's
# agent from the lab namespace with rocectl, and read the node back with
# independent clients (dcb -j, ip -j link, the ECN and dcbtest sysfs files,
# configfs rdma_cm, hugepage counts). Sourced, not run; sources lib.sh.
#
# Every test starts from, and leaves node1 in, the same baseline: the agent's
# accepted config manages nothing (so later tests that drive dcb by hand are
# not fought by it), the test NIC is reset (DCB, app table, ECN, counters,
# refuse_* controls), eth0 MTU 1500, rdma_cm defaults RoCE v2 / ToS 0, no
# hugepages.
# shellcheck shell=bash
# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
TEST_NAME=$(basename "$0" .sh)
require_lab
((AGENT)) || skip "the lab was brought up without the agent (binaries not built: ${ROCED_BIN:-?})"

REC_NODE=node1
REC_ADDR=$("$LAB" addr "$REC_NODE")
REC_NS=$("$LAB" netns)
REC_TMP=$(mktemp -d "/tmp/$TEST_NAME.XXXXXX")
REPO_DIR=$(cd "$TESTS_DIR/../../.." && pwd)
# The checked-in example every reconcile test starts from.
LOSSLESS=$REPO_DIR/deploy/examples/lossless-prio3.yaml
DCBT=/sys/class/net/eth0/dcbtest
RDMA_CM=/sys/kernel/config/rdma_cm/rxe0/ports/1

# rctl ARGS...: rocectl against node1's agent, from the lab namespace.
rctl() { ip netns exec "$REC_NS" "$ROCECTL_BIN" --target "$REC_ADDR:7471" --timeout 60s "$@"; }

# cfg NAME <<EOF ... EOF: writes a config file, prints its path.
cfg() { cat >"$REC_TMP/$1.yaml"; echo "$REC_TMP/$1.yaml"; }

NEUTRAL=$(cfg neutral <<'EOF'
apiVersion: roced/v1
kind: NodeConfig
EOF
)

# The same fields as lossless-prio3.yaml, every value different: RoCE on
# priority 4 (DSCP 34), ETS 60/40, ToS 138.
PRIO4=$(cfg prio4 <<'EOF'
apiVersion: roced/v1
kind: NodeConfig
mode: enforce
interfaces:
  - match: {netdev: eth0}
    qos:
      trust: dscp
      dscp_to_priority: {34: 4, 46: 5}
      pfc: {priorities: [4]}
      ets:
        priority_to_tc: [0, 0, 0, 0, 1, 0, 0, 0]
        tc_bandwidth: [60, 40, 0, 0, 0, 0, 0, 0]
        tsa: [ets, ets, strict, strict, strict, strict, strict, strict]
      ecn: {np_priorities: [4], rp_priorities: [4]}
    roce: {default_mode: v2, default_tos: 138}
EOF
)

# Back to the baseline (see the top of this file). Fails the test if it can't.
rec_reset() {
  rctl apply -f "$NEUTRAL" >/dev/null || fail "could not apply the neutral config to $REC_NODE"
  lsh "$REC_NODE" "
    echo 1 > $DCBT/reset
    echo 0 > $DCBT/calls
    ip link set eth0 mtu 1500
    if [ -d $RDMA_CM ]; then echo 'RoCE v2' > $RDMA_CM/default_roce_mode; echo 0 > $RDMA_CM/default_roce_tos; fi
    for h in /sys/kernel/mm/hugepages/hugepages-*/nr_hugepages; do echo 0 > \$h; done" ||
    fail "could not reset $REC_NODE"
}

# rec_on_cleanup 'SHELL CODE': run on exit, before the baseline is restored
# (e.g. eth0 given back first: the reset talks to the agent over it). Steps
# run in the order added; a failing one is logged and the rest still run.
REC_CLEANUP=()
rec_on_cleanup() { REC_CLEANUP+=("$1"); }

# On exit, pass or fail: leave the baseline for the next test, keep the exit
# status. Never fails itself.
rec_cleanup() {
  local rc=$? c
  trap - EXIT
  for c in "${REC_CLEANUP[@]}"; do (eval "$c") >/dev/null 2>&1 || log "WARNING: cleanup step failed: $c"; done
  if ! "$LAB" agent status "$REC_NODE" >/dev/null 2>&1; then "$LAB" agent start "$REC_NODE" >/dev/null 2>&1 || true; fi
  (rec_reset) >/dev/null 2>&1 || log "WARNING: could not restore the baseline on $REC_NODE"
  rm -rf "$REC_TMP"
  exit "$rc"
}
trap rec_cleanup EXIT

# The DCB test NIC's call counters as JSON: {"setpfc": N, "setets": N, ...}.
rec_calls() {
  local raw
  raw=$(lx "$REC_NODE" cat "$DCBT/calls") || fail "cannot read $DCBT/calls"
  "$PY" -c 'import json,sys; print(json.dumps({k: int(v) for k, v in (l.split() for l in sys.argv[1].splitlines() if l.strip())}, sort_keys=True))' "$raw"
}

# Everything the reconciler manages on node1, read with independent clients,
# as one canonical JSON object (equal strings = equal node state). dcb -j for
# PFC, app table and ETS; sysfs for MTU, ECN, trust, hugepages; configfs for
# rdma_cm (left out while rxe0 is gone: its configfs group stays, reading
# ENODEV). Files are read with the shell's `read` (each fork+exec costs
# ~0.1-0.3 s under TCG); `dcb -b` would save two more, but its batch mode
# fails every command after the first in this iproute2.
rec_snapshot() {
  local raw
  raw=$(lsh "$REC_NODE" "
    r() { echo \"@\$1\"; shift; for f; do read -r v < \$f; echo \"\$v\"; done; }
    n=/sys/class/net/eth0
    echo @pfc; dcb -j pfc show dev eth0
    echo; echo @app; dcb -j app show dev eth0
    echo; echo @ets; dcb -j ets show dev eth0
    echo
    r mtu \$n/mtu
    r ecn_np \$n/ecn/roce_np/enable/0 \$n/ecn/roce_np/enable/1 \$n/ecn/roce_np/enable/2 \$n/ecn/roce_np/enable/3 \$n/ecn/roce_np/enable/4 \$n/ecn/roce_np/enable/5 \$n/ecn/roce_np/enable/6 \$n/ecn/roce_np/enable/7
    r ecn_rp \$n/ecn/roce_rp/enable/0 \$n/ecn/roce_rp/enable/1 \$n/ecn/roce_rp/enable/2 \$n/ecn/roce_rp/enable/3 \$n/ecn/roce_rp/enable/4 \$n/ecn/roce_rp/enable/5 \$n/ecn/roce_rp/enable/6 \$n/ecn/roce_rp/enable/7
    r trust $DCBT/trust
    if [ -d $RDMA_CM ] && [ -d /sys/class/infiniband/rxe0 ]; then r roce_mode $RDMA_CM/default_roce_mode; r roce_tos $RDMA_CM/default_roce_tos; fi
    r hugepages_2048kB /sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
    r hugepages_1048576kB /sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages") ||
    fail "cannot read $REC_NODE's state"
  "$PY" - "$raw" <<'PY'
import json, sys
sections, key = {}, None
for line in sys.argv[1].splitlines():
    if line.startswith("@"):
        key = line[1:]
        sections[key] = []
    elif key is not None and line.strip():
        sections[key].append(line.strip())
out = {}
for k, lines in sections.items():
    text = "\n".join(lines)
    if k in ("pfc", "app", "ets"):
        out[k] = json.loads(text)
    elif k in ("ecn_np", "ecn_rp"):
        out[k] = [p for p, v in enumerate(lines) if v == "1"]
    elif k.startswith("hugepages_") or k in ("roce_tos", "mtu"):
        out[k] = int(text)
    else:
        out[k] = text
print(json.dumps(out, sort_keys=True))
PY
}

# snap_get SNAPSHOT EXPR: EXPR evaluated with the snapshot bound to j.
snap_get() { json_get "$1" "$2"; }

# snap_drop SNAPSHOT KEY...: the snapshot without those keys (same form).
snap_drop() {
  local snap=$1
  shift
  "$PY" -c 'import json,sys; j=json.loads(sys.argv[1]); [j.pop(k, None) for k in sys.argv[2:]]; print(json.dumps(j, sort_keys=True))' "$snap" "$@"
}

# expect_same_state WHAT BEFORE AFTER: fails naming every key that differs.
expect_same_state() {
  [[ $2 == "$3" ]] && return 0
  local diff
  diff=$("$PY" -c '
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
for k in sorted(set(a) | set(b)):
    if a.get(k) != b.get(k):
        print(f"  {k}: {a.get(k)!r} -> {b.get(k)!r}")' "$2" "$3")
  fail "$1: node state changed:
$diff"
}

# The agent's state as JSON (rocectl -o json status).
rec_status() { rctl -o json status || fail "rocectl status failed"; }

# rec_field_sync STATUS_JSON OBJECT FIELD: the sync state of one managed field.
rec_field_sync() {
  json_get "$1" "next((f.get('sync', '') for f in j.get('fields', []) if f.get('object') == '$2' and f.get('field') == '$3'), 'ABSENT')"
}

# rec_metric NAME: one sample's value from node1's /metrics (first match, so
# pass the full series for labelled ones, e.g. 'x{result="noop"}').
rec_metric() {
  ip netns exec "$REC_NS" "$PY" - "$REC_ADDR" "$1" <<'PY'
import sys, urllib.request
text = urllib.request.urlopen(f"http://{sys.argv[1]}:9471/metrics", timeout=20).read().decode()
for line in text.splitlines():
    name, _, value = line.rpartition(" ")
    if name == sys.argv[2]:
        print(value)
        break
else:
    sys.exit(f"no sample {sys.argv[2]} on /metrics")
PY
}

# rec_readyz [QUERY]: node1's GET /readyz as "CODE BODY" (the body's lines
# joined by " | ").
rec_readyz() {
  ip netns exec "$REC_NS" "$PY" - "$REC_ADDR" "${1:-}" <<'PY'
import sys, urllib.error, urllib.request
try:
    r = urllib.request.urlopen(f"http://{sys.argv[1]}:9471/readyz{sys.argv[2]}", timeout=20)
    code, body = r.status, r.read().decode()
except urllib.error.HTTPError as e:
    code, body = e.code, e.read().decode()
print(code, " | ".join(body.splitlines()))
PY
}

# The accepted generation, as a number.
rec_generation() { json_get "$(rec_status)" "int(j['config'].get('generation', 0))"; }


# rec_wait_state WANT SECS WHAT: polls rec_snapshot until it equals WANT;
# after SECS fails naming every key that still differs. Prints the seconds
# it took.
rec_wait_state() {
  local want=$1 secs=$2 what=$3 now t0
  t0=$(date +%s.%N)
  local deadline=$((SECONDS + secs))
  while :; do
    now=$(rec_snapshot)
    [[ $now == "$want" ]] && break
    ((SECONDS < deadline)) || expect_same_state "$what (${secs} s)" "$want" "$now"
    sleep 0.5
  done
  elapsed "$t0"
}

# rec_apply_interrupted FILE 'FAULT': applies FILE to node1 with rocectl,
# and in the guest, the moment the apply's first app-table SET has reached
# the driver (dcbtest/calls), stops roced (SIGSTOP), runs the shell snippet
# FAULT (sh -c, in the guest), then lets roced go on (SIGCONT). So the fault
# lands between two steps of the apply whatever the timing: the DSCP step is
# half done, PFC, ETS, ECN and RoCE still to come. The apply must change the
# DSCP map. Sets REC_RC and REC_OUT (rocectl's status and output) and
# REC_FAULT_OUT (what the watcher and FAULT printed).
rec_apply_interrupted() {
  local file=$1 fault=$2 watcher
  lsh "$REC_NODE" "echo 0 > $DCBT/calls; rm -f /tmp/rec-fault.ready"
  printf '%s\n' "$fault" >"$REC_TMP/fault.sh"
  "$LAB" exec -i -t 90 "$REC_NODE" -- sh -c 'cat > /tmp/rec-fault.sh' <"$REC_TMP/fault.sh"
  # bash builtins only between seeing the SET and the stop (no fork).
  "$LAB" exec -t 90 "$REC_NODE" -- bash -c "
    pid=\$(pgrep -x roced) || { echo 'no roced'; exit 1; }
    : > /tmp/rec-fault.ready
    end=\$((SECONDS + 60))
    while :; do
      { read -r _; read -r _; read -r app; } < $DCBT/calls
      [[ \$app != 'setapp 0' ]] && break
      ((SECONDS < end)) || { echo 'no app-table SET within 60 s'; exit 1; }
    done
    kill -STOP \$pid && echo stopped
    sh /tmp/rec-fault.sh; echo \"fault rc \$?\"
    kill -CONT \$pid && echo continued" >"$REC_TMP/watch.out" 2>&1 &
  watcher=$!
  wait_guest_file "$REC_NODE" /tmp/rec-fault.ready 30 "the fault watcher"
  REC_RC=0
  REC_OUT=$(rctl apply -f "$file" 2>&1) || REC_RC=$?
  wait "$watcher" || fail "fault watcher failed: $(cat "$REC_TMP/watch.out")"
  REC_FAULT_OUT=$(cat "$REC_TMP/watch.out")
  grep -q '^continued' <<<"$REC_FAULT_OUT" || fail "the fault did not land in the apply: $REC_FAULT_OUT"
}

# rec_wait_converged SECS WHAT: polls status until the agent says converged
# (its last pass found the node equal to the config); prints that status.
rec_wait_converged() {
  local st deadline=$((SECONDS + $1))
  while :; do
    st=$(rec_status)
    [[ $(json_get "$st" "j['config'].get('converged', False)") == True ]] && break
    ((SECONDS < deadline)) || fail "$2: status not converged after $1 s; fields: $(json_get "$st" "[f for f in j.get('fields', []) if f.get('sync') != 'FIELD_SYNC_IN_SYNC']")"
    sleep 0.5
  done
  printf '%s\n' "$st"
}

# The QoS knobs (buffers, PFC prevention, CNP/DCQCN) on node1, read with independent clients, as one
# canonical JSON object: the port buffers (dcb -j buffer), the PFC storm
# prevention timeout (ethtool --get-tunable, "off: <why>" when it fails) and
# the CNP/DCQCN files of the test NIC (ecn/roce_np|roce_rp/<name>).
REC_DCQCN_NP="cnp_dscp cnp_802p_prio min_time_between_cnps"
REC_DCQCN_RP="rpg_time_reset rpg_ai_rate rpg_hai_rate rpg_min_rate rate_reduce_monitor_period dce_tcp_g initial_alpha_value"
rec_knobs() {
  local raw
  raw=$(lsh "$REC_NODE" "
    e=/sys/class/net/eth0/ecn
    echo \"buffer=\$(dcb -j buffer show dev eth0)\"
    echo \"tout=\$(ethtool --get-tunable eth0 pfc-prevention-tout 2>&1 | tr '\\n' ' ')\"
    for f in $REC_DCQCN_NP; do read -r v < \$e/roce_np/\$f; echo \"\$f=\$v\"; done
    for f in $REC_DCQCN_RP; do read -r v < \$e/roce_rp/\$f; echo \"\$f=\$v\"; done") ||
    fail "cannot read $REC_NODE's QoS knobs"
  "$PY" - "$raw" <<'PY'
import json, re, sys
out = {}
for line in sys.argv[1].splitlines():
    name, _, value = line.partition("=")
    if name == "buffer":
        out[name] = json.loads(value)
    elif name == "tout":
        m = re.search(r"pfc-prevention-tout:\s*(\d+)", value)
        out[name] = m.group(1) if m else "off: " + value.strip()
    elif name:
        out[name] = int(value)
print(json.dumps(out, sort_keys=True))
PY
}

# The QoS knobs with PFC on 3: priority 3 in buffer 1, PFC prevention
# 500 ms, six CNP/DCQCN parameters off their defaults; a 3 s periodic pass
# (the tunable and the sysfs files raise no event). The buffers leave 64 KiB
# of the test NIC's 512 KiB: mlx5 refuses a layout that leaves the shared
# buffer less than 4 cells (port_update_shared_buffer).
KNOBS=$(cfg knobs <<'EOF'
apiVersion: roced/v1
kind: NodeConfig
reconcile: {interval: 3s}
interfaces:
  - match: {netdev: eth0}
    qos:
      pfc: {priorities: [3]}
      buffers:
        priority_to_buffer: [0, 0, 0, 1, 0, 0, 0, 0]
        size_bytes: [196608, 262144, 0, 0, 0, 0, 0, 0]
      pfc_prevention: {timeout_ms: 500}
      dcqcn:
        cnp_dscp: 46
        cnp_802p_prio: 5
        min_time_between_cnps: 8
        rpg_time_reset: 600
        rpg_ai_rate: 10
        rate_reduce_monitor_period: 8
EOF
)
