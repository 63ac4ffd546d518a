#!/usr/bin/env bash
# `rocectl rollout` across the lab's three agents, each node judging its
# change by real RC probes, on the lab's one bridge:
#  1. A good config (RoCE ToS 104, DSCP 26) with the default policy (60 s,
#     converged, no PFC storm, and probes to two other targets chosen by
#     rocectl, announced first), all three nodes in one batch (one 60 s
#     window; test 4 covers batches): every node confirms by itself; the
#     rollout exits 0.
#  2. The bridge drops RoCE of DSCP 46. A config moving the ToS to 184
#     (DSCP 46), default settings again: the canary (node1) probes node2
#     and node3 in its new class, rolls back by itself inside its window,
#     the rollout halts (exit 1, naming node1 and the probe), and node2 and
#     node3 are untouched (same generation).
# 3 and 4 name their policy, a probe to node3 (node3 probes itself over
# rxe's loopback):
#  3. Only node2's port drops DSCP 46; the same config, batches of 1, with
#     --on-failure rollback: node1 confirms, node2 rolls back, and node1 is
#     returned: every node ends on its previous config, node3 untouched.
#  4. A good config (ToS 106), canary 1 then batches up to 2, rocectl killed (SIGKILL)
#     during the canary's window: `rocectl rollout resume` finishes it and
#     every node confirms.
# At the end every node gets the ToS 0 and then the lab's own config back.
source "$(dirname "$0")/probe_lib.sh"
NS=$PROBE_NS
tmp=$(mktemp -d "/tmp/$TEST_NAME.XXXXXX")
NODES=(node1 node2 node3)
cleanup() {
  "$LAB" fault bridge clear >/dev/null 2>&1 || true
  local n
  for n in "${NODES[@]}"; do
    pctl "$n" apply -f "$tmp/tos0.yaml" >/dev/null 2>&1 || true
    pctl "$n" apply -f "$("$LAB" logdir "$n")/roced.yaml" >/dev/null 2>&1 || true
  done
  rm -rf "$tmp"
}
trap cleanup EXIT
probe_prepare "${NODES[@]}"

tos_config() { # tos_config NAME TOS: a config that sets only RoCE's default ToS
  cat >"$tmp/$1.yaml" <<EOF
apiVersion: roced/v1
kind: NodeConfig
mode: enforce
interfaces:
  - match: {netdev: eth0}
    roce: {default_mode: v2, default_tos: $2}
EOF
}
tos_config tos0 0
tos_config good 104
tos_config bad 184
tos_config good2 106
: >"$tmp/targets"
for n in "${NODES[@]}"; do echo "$n $("$LAB" addr "$n"):7471" >>"$tmp/targets"; done
PEER="$("$LAB" addr node3):7471"
state=$tmp/rollout.json

# rollout ARGS...: rocectl rollout from the lab namespace, -o json events;
# sets RC and OUT.
rollout() {
  set +e
  OUT=$(ip netns exec "$NS" "$ROCECTL_BIN" --timeout 30s -o json rollout --targets "$tmp/targets" \
    --state "$state" "$@" 2>&1)
  RC=$?
  set -e
}
# summary KEY: a field of the rollout's closing summary.
summary() {
  "$PY" -c '
import json, sys
for line in sys.argv[1].splitlines():
    try:
        e = json.loads(line)
    except ValueError:
        continue
    if e.get("event") == "summary":
        print(e.get(sys.argv[2], 0))' "$OUT" "$1"
}
gen() { json_get "$(pctl "$1" -o json status)" "int(j['config'].get('generation', 0))"; }
tos_of() { json_get "$(pctl "$1" -o json status)" "j['config']['desired'].get('interfaces', [{}])[0].get('roce', {}).get('defaultTos', 0)"; }
provisional() { json_get "$(pctl "$1" -o json status)" "'confirmDeadline' in j['config']"; }
policy="window=10s,converged,no-pfc-storm,probe=$PEER"

# --- 1. a good config confirms on every node, with the default policy -----
t0=$(date +%s.%N)
rollout -f "$tmp/good.yaml" --canary 3 --max-unavailable 3
took_good=$(elapsed "$t0")
((RC == 0)) || fail "rollout of a good config with default settings exited $RC:
$OUT"
"$PY" -c '
import json, sys
gates = [json.loads(l) for l in sys.argv[1].splitlines() if l.startswith("{\"event\":\"gates\"")]
sys.exit(0 if gates and "node1 -> node2, node3;" in gates[0]["message"] else 1)' "$OUT" ||
  fail "the gates event does not name node1's two probe peers:
$OUT"
expect_eq "nodes confirmed" 3 "$(summary confirmed)"
for n in "${NODES[@]}"; do
  expect_eq "$n: ToS after the good rollout" 104 "$(tos_of "$n")"
  expect_eq "$n: provisional after the good rollout" False "$(provisional "$n")"
done

# --- 2. a ToS the fabric drops: the canary rolls back, the rollout halts -----
"$LAB" fault bridge drop-dscp 46 || fail "could not make the bridge drop DSCP 46"
g2=$(gen node2)
g3=$(gen node3)
rm -f "$state"
t0=$(date +%s.%N)
rollout -f "$tmp/bad.yaml" --max-unavailable 2
took_bad=$(elapsed "$t0")
((RC == 1)) || fail "rollout of a dropped ToS exited $RC, not 1:
$OUT"
expect_eq "halted by" "node1 ($("$LAB" addr node1):7471)" "$(summary halted_by)"
grep -q '"event":"node_rolled_back".*"node":"node1".*"reason":"probe"' <<<"$OUT" ||
  fail "no rollback of node1 by its probe gate in the events:
$OUT"
expect_eq "node1: ToS after its rollback" 104 "$(tos_of node1)"
expect_eq "node2 untouched (generation)" "$g2" "$(gen node2)"
expect_eq "node3 untouched (generation)" "$g3" "$(gen node3)"
"$PY" -c "import sys; sys.exit(0 if $took_bad < 60 else 1)" ||
  fail "the halted rollout took $took_bad s, longer than the canary's 60 s window"

# --- 3. a failure in the second batch with --on-failure rollback -------------
"$LAB" fault bridge drop-dscp 46 node2 || fail "could not make node2's port drop DSCP 46"
declare -A before
for n in "${NODES[@]}"; do before[$n]=$(tos_of "$n"); done
g3=$(gen node3)
rm -f "$state"
rollout -f "$tmp/bad.yaml" --canary 1 --max-unavailable 1 --on-failure rollback \
  --confirm-policy "window=10s,converged,probe=$PEER"
((RC == 1)) || fail "rollout with a failure in batch 2 exited $RC, not 1:
$OUT"
expect_eq "halted by" "node2 ($("$LAB" addr node2):7471)" "$(summary halted_by)"
grep -q '"event":"node_confirmed".*"node":"node1"' <<<"$OUT" || fail "node1 (the canary) did not confirm first:
$OUT"
grep -q '"event":"node_reverted".*"node":"node1"' <<<"$OUT" || fail "node1 was not returned:
$OUT"
for n in "${NODES[@]}"; do
  expect_eq "$n: back on its previous config's ToS" "${before[$n]}" "$(tos_of "$n")"
  expect_eq "$n: provisional after the revert" False "$(provisional "$n")"
done
expect_eq "node3 untouched (generation)" "$g3" "$(gen node3)"
"$LAB" fault bridge clear

# --- 4. rocectl killed mid-rollout, then resumed ----------------------------
rm -f "$state"
ip netns exec "$NS" "$ROCECTL_BIN" --timeout 30s -o json rollout --targets "$tmp/targets" --state "$state" \
  -f "$tmp/good2.yaml" --canary 1 --max-unavailable 2 --confirm-policy "$policy" >"$tmp/killed.out" 2>&1 &
pid=$!
for _ in $(seq 1 60); do
  grep -q '"event":"node_waiting"' "$tmp/killed.out" && break
  sleep 0.25
done
kill -9 "$pid"
wait "$pid" 2>/dev/null || true
grep -q '"event":"node_waiting"' "$tmp/killed.out" || fail "rocectl was killed before any node was waiting:
$(cat "$tmp/killed.out")"
set +e
OUT=$(ip netns exec "$NS" "$ROCECTL_BIN" --timeout 30s -o json rollout resume --state "$state" 2>&1)
RC=$?
set -e
((RC == 0)) || fail "rollout resume exited $RC:
$OUT"
expect_eq "nodes confirmed after resume" 3 "$(summary confirmed)"
for n in "${NODES[@]}"; do expect_eq "$n: ToS after the resumed rollout" 106 "$(tos_of "$n")"; done
pass "default settings: good config confirmed on 3 nodes in $took_good s; dropped ToS: canary rolled back and rollout halted after $took_bad s, others untouched; failure in batch 2 with --on-failure rollback: all back; killed and resumed: done"
