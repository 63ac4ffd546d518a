#!/usr/bin/env bash
# The confirm policy's mesh gate on the lab's mesh: the three
# agents restarted with the mesh (each probes the other two at 10 a second
# over UD), and node1 judging its changes by the loss of its own probes.
#  1. A config applied with `--confirm-policy window=30s,mesh-loss=0.05`,
#     then 20% loss on node3's link (netem, both ways): node1's probes of
#     node3 lose about 36%, of all its probes about 18%, against a clean
#     baseline. The agent rolls back by itself, reason mesh_loss, the detail
#     giving the loss since the apply and before it, well inside the window.
#  2. The loss cleared, the same change applied with the same policy holds
#     for the window and the agent confirms it.
# The agents are restarted without the mesh, and node1 gets the lab's own
# config back, at the end.
source "$(dirname "$0")/probe_lib.sh"
source "$(dirname "$0")/mesh_lib.sh"
NS=$PROBE_NS
tmp=$(mktemp -d "/tmp/$TEST_NAME.XXXXXX")
cleanup() {
  "$LAB" netem node3 clear >/dev/null 2>&1 || true
  mesh_agents_off
  pctl node1 apply -f "$tmp/tos0.yaml" >/dev/null 2>&1 || true
  pctl node1 apply -f "$("$LAB" logdir node1)/roced.yaml" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT

for t in 0 104; do
  cat >"$tmp/tos$t.yaml" <<EOF
apiVersion: roced/v1
kind: NodeConfig
mode: enforce
interfaces:
  - match: {netdev: eth0}
    roce: {default_mode: v2, default_tos: $t}
EOF
done
mesh_agents_on "$tmp/inventory.txt"
pctl node1 apply -f "$tmp/tos0.yaml" >/dev/null || fail "node1: could not apply the starting config"

# apply_judged FILE: applies FILE to node1 with the mesh gate; prints the
# generation (fails on a refusal, e.g. a baseline of too few probes).
apply_judged() {
  local out
  out=$(pctl node1 apply -f "$1" --confirm-policy "window=30s,mesh-loss=0.05") || { echo "$out" >&2; return 1; }
  sed -n 's/^Accepted as generation \([0-9]*\)\.$/\1/p' <<<"$out"
}
# wait_status SECS PYEXPR: polls node1's status until PYEXPR (over j) holds.
wait_status() {
  local deadline=$((SECONDS + $1)) st
  while :; do
    st=$(pctl node1 -o json status) || fail "rocectl status failed"
    [[ $(json_get "$st" "bool($2)") == True ]] && return 0
    ((SECONDS < deadline)) || fail "not within $1 s: $2; config: $(json_get "$st" "j['config']")"
    sleep 0.5
  done
}

# A baseline needs 50 probes in the mesh's window: the agent refuses until
# then, so retry for a while after the restart.
gen=""
for _ in $(seq 1 30); do
  gen=$(apply_judged "$tmp/tos104.yaml" 2>"$tmp/err") && [[ -n $gen ]] && break
  grep -q "fewer than the 50 a baseline needs" "$tmp/err" || fail "apply with a mesh gate refused: $(cat "$tmp/err")"
  sleep 2
done
[[ -n $gen ]] || fail "node1's mesh never had a baseline of 50 probes: $(cat "$tmp/err")"
t0=$(date +%s.%N)
"$LAB" netem node3 loss 20% >/dev/null || fail "netem loss on node3 failed"
wait_status 30 "int(j['config'].get('lastRollback', {}).get('generation', 0)) == $gen"
took=$(elapsed "$t0")
st=$(pctl node1 -o json status)
expect_eq "source after the rollback" CONFIG_SOURCE_CONFIRM_GATE "$(json_get "$st" "j['config']['source']")"
expect_eq "rollback reason" mesh_loss "$(json_get "$st" "j['config']['lastRollback']['reason']")"
detail=$(json_get "$st" "j['config']['lastRollback']['detail']")
[[ $detail =~ ^mesh_loss:\ loss\ ([0-9.]+)%\ over\ ([0-9]+)\ probes\ since\ the\ apply\;\ ([0-9.]+)%\ before ]] ||
  fail "rollback detail: $detail"
loss=${BASH_REMATCH[1]} before=${BASH_REMATCH[3]}
"$PY" -c "import sys; sys.exit(0 if $loss > $before + 5 and $before < 2 else 1)" ||
  fail "the gate failed on loss $loss% against $before% before: $detail"
expect_eq "desired ToS after the rollback" 0 \
  "$(json_get "$st" "j['config']['desired']['interfaces'][0]['roce'].get('defaultTos', 0)")"

"$LAB" netem node3 clear >/dev/null || fail "netem clear failed"
# The probes in flight at the clear settle (1 s timeout) before the second
# apply: 20 more of node3's.
read -r s _ <<<"$(mesh_counts node1 node3)"
mesh_wait_sent node1 node3 $((s + 20)) 20 >/dev/null || fail "node1 -> node3: no probes settled after the clear"
gen2=$(apply_judged "$tmp/tos104.yaml") || fail "the second apply was refused"
[[ -n $gen2 ]] || fail "no generation for the second apply"
wait_status 60 "j['config'].get('generation') == '$gen2' and 'confirmDeadline' not in j['config']"
pass "20% loss on node3 after the apply: rolled back after $took s of a 30 s window ($detail); without it the same change confirmed"
