#!/usr/bin/env bash
# Health-gated confirm on a real kernel: node1's agent judges a
# provisional config by its confirm policy, with a real RC latency probe to
# node2 as the gate that matters.
#  1. A config that moves RoCE's ToS to 104 (DSCP 26), applied with
#     `--confirm-policy window=10s,converged,no-pfc-storm,probe=NODE2`:
#     while provisional, GetState shows the three gates and `rocectl ready`
#     names the confirm policy; the agent confirms it by itself after the
#     window (same generation, no deadline), with the ToS in configfs.
#  2. The bridge drops RoCE of DSCP 46. A config moving the ToS to 184
#     (DSCP 46), with a 60 s window: the probe to node2 fails and the agent
#     rolls back by itself well inside the window: the previous config back
#     (source CONFIRM_GATE), last_rollback says "probe" and the probe's
#     failure, configfs has ToS 104 again, roced_config_rollbacks_total
#     {reason="probe"} went up by one, and `rocectl events` showed it.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset
rec_on_cleanup '"$LAB" fault bridge clear'
PEER="$("$LAB" addr node2):7471"

GOOD=$(cfg tos104 <<'EOF'
apiVersion: roced/v1
kind: NodeConfig
mode: enforce
interfaces:
  - match: {netdev: eth0}
    roce: {default_mode: v2, default_tos: 104}
EOF
)
BAD=$(cfg tos184 <<'EOF'
apiVersion: roced/v1
kind: NodeConfig
mode: enforce
interfaces:
  - match: {netdev: eth0}
    roce: {default_mode: v2, default_tos: 184}
EOF
)
tos() { lsh "$REC_NODE" "cat $RDMA_CM/default_roce_tos"; }
# wait_config SECS PYEXPR: polls rocectl status until PYEXPR (over j, the
# status JSON) holds; prints the seconds it took, fails after SECS.
wait_config() {
  local secs=$1 expr=$2 t0 st
  t0=$(date +%s.%N)
  local deadline=$((SECONDS + secs))
  while :; do
    st=$(rec_status)
    [[ $(json_get "$st" "bool($expr)") == True ]] && break
    ((SECONDS < deadline)) || fail "not within $secs s: $expr; config now: $(json_get "$st" "j['config']")"
    sleep 0.5
  done
  elapsed "$t0"
}

# --- 1. a good config confirms itself --------------------------------------
t0=$(date +%s.%N)
out=$(rctl apply -f "$GOOD" --confirm-policy "window=10s,converged,no-pfc-storm,probe=$PEER") ||
  fail "apply with a confirm policy failed: $out"
gen=$(sed -n 's/^Accepted as generation \([0-9]*\)\.$/\1/p' <<<"$out")
[[ -n $gen ]] || fail "no generation in the apply output: $out"
# The guard shows its gates once its first check (with the first probe)
# is done.
wait_config 8 "j['config'].get('gates')" >/dev/null
st=$(rec_status)
expect_eq "gates while provisional" "['converged', 'pfc_storm', 'probe $PEER']" \
  "$(json_get "$st" "[g['gate'] for g in j['config'].get('gates', [])]")"
if r=$(rctl ready); then fail "rocectl ready exited 0 while generation $gen is judged: $r"; fi
grep -q "generation $gen is provisional, judged by its confirm policy" <<<"$r" || fail "rocectl ready: $r"
wait_config 40 "j['config'].get('generation') == '$gen' and 'confirmDeadline' not in j['config']" >/dev/null
took_ok=$(elapsed "$t0")
st=$(rec_status)
expect_eq "source after the self-confirm" CONFIG_SOURCE_GRPC "$(json_get "$st" "j['config']['source']")"
expect_eq "ToS after the self-confirm (configfs)" 104 "$(tos)"
rb0=$(rec_metric 'roced_config_rollbacks_total{reason="probe"}')

# --- 2. a ToS the fabric drops rolls back by itself -------------------------
"$LAB" fault bridge drop-dscp 46 || fail "could not make the bridge drop DSCP 46"
events=$REC_TMP/events.txt
rctl events --for 60s >"$events" 2>&1 &
ev_pid=$!
sleep 1
t0=$(date +%s.%N)
out=$(rctl apply -f "$BAD" --confirm-policy "window=60s,converged,probe=$PEER") || fail "apply of ToS 184 failed: $out"
bad=$(sed -n 's/^Accepted as generation \([0-9]*\)\.$/\1/p' <<<"$out")
[[ -n $bad ]] || fail "no generation in the apply output: $out"
wait_config 60 "int(j['config'].get('lastRollback', {}).get('generation', 0)) == $bad" >/dev/null
took_bad=$(elapsed "$t0")
st=$(rec_status)
expect_eq "source after the rollback" CONFIG_SOURCE_CONFIRM_GATE "$(json_get "$st" "j['config']['source']")"
expect_eq "generation after the rollback" "$((bad + 1))" "$(json_get "$st" "int(j['config']['generation'])")"
expect_eq "rollback reason" probe "$(json_get "$st" "j['config']['lastRollback']['reason']")"
detail=$(json_get "$st" "j['config']['lastRollback']['detail']")
[[ $detail == "probe $PEER: probe failed"* ]] || fail "rollback detail: $detail"
expect_eq "desired ToS after the rollback" 104 \
  "$(json_get "$st" "j['config']['desired']['interfaces'][0]['roce']['defaultTos']")"
# The node is written back after the config is accepted.
for _ in $(seq 1 20); do [[ $(tos) == 104 ]] && break; sleep 0.5; done
expect_eq "ToS after the rollback (configfs)" 104 "$(tos)"
"$PY" -c "import sys; sys.exit(0 if $took_bad < 60 else 1)" || fail "the rollback took $took_bad s, not inside the 60 s window"
expect_eq "roced_config_rollbacks_total{reason=\"probe\"}" "$((${rb0%.*} + 1))" \
  "$(rec_metric 'roced_config_rollbacks_total{reason="probe"}' | cut -d. -f1)"
sleep 1
kill "$ev_pid" 2>/dev/null || true
wait "$ev_pid" 2>/dev/null || true
grep -q "generation $bad ROLLED BACK (probe: probe $PEER" "$events" || fail "rocectl events did not show the rollback:
$(cat "$events")"
pass "a 10 s window confirmed itself $took_ok s after the apply; ToS 184 (DSCP dropped) rolled back after $took_bad s of a 60 s window (${detail})"
