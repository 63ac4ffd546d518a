#!/usr/bin/env bash
# `rocectl apply --confirm-timeout 3s` without `rocectl confirm`: the new
# config is in force at once, and after the deadline the agent goes back to
# the previous accepted config by itself (node state identical to before,
# config source CONFIRM_TIMEOUT), not earlier. Then the same from a config
# that manages nothing: the rollback also undoes the fields only the
# provisional config managed (PFC, DSCP, ETS, ECN, ToS back to the baseline).
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

rctl apply -f "$LOSSLESS" >/dev/null || fail "apply of A (lossless-prio3.yaml) failed"
state_a=$(rec_snapshot)

out=$(rctl apply --confirm-timeout 3s -f "$PRIO4") || fail "provisional apply failed: $out"
t0=$(date +%s.%N)
grep -q "^Provisional" <<<"$out" || fail "rocectl did not say the config is provisional:
$out"
grep -A5 "~ eth0 qos.pfc$" <<<"$out" | grep -q "= applied" || fail "the provisional PFC step was not applied:
$out"
pfc=$(lx "$REC_NODE" dcb -j pfc show dev eth0)
in_force=$(elapsed "$t0")
if [[ $(json_get "$pfc" "j['prio_pfc'][4]") == True ]]; then
  :
elif "$PY" -c "import sys; sys.exit(0 if float('$in_force') >= 3 else 1)"; then
  log "note: the first read came ${in_force} s after the apply, past the deadline; the agent's verified steps show it was in force"
else
  fail "PFC ${in_force} s after the provisional apply is not the provisional one: $pfc"
fi

deadline=$((SECONDS + 20))
while :; do
  now=$(rec_snapshot)
  [[ $now == "$state_a" ]] && break
  ((SECONDS < deadline)) || expect_same_state "20 s after the confirm deadline" "$state_a" "$now"
  sleep 0.5
done
back=$(elapsed "$t0")
"$PY" -c "import sys; sys.exit(0 if float('$back') >= 2.5 else 1)" || fail "rolled back after $back s, before the 3 s deadline"
st=$(rec_status)
expect_eq "config source" CONFIG_SOURCE_CONFIRM_TIMEOUT "$(json_get "$st" "j['config']['source']")"
expect_eq "confirm deadline cleared" False "$(json_get "$st" "'confirmDeadline' in j['config']")"
log "same fields: rolled back by itself ${back} s after the apply"

rec_reset
base=$(rec_snapshot)
out=$(rctl apply --confirm-timeout 3s -f "$LOSSLESS") || fail "provisional apply of lossless-prio3 failed: $out"
grep -A5 "~ eth0 qos.pfc$" <<<"$out" | grep -q "= applied" || fail "the provisional PFC step was not applied:
$out"
deadline=$((SECONDS + 20))
while :; do
  now=$(rec_snapshot)
  [[ $now == "$base" ]] && break
  ((SECONDS < deadline)) || expect_same_state "20 s after the confirm deadline (from a config managing nothing)" "$base" "$now"
  sleep 0.5
done
pass "provisional config in force, rolled back by itself ${back} s after the apply; from a config managing nothing, every field it changed returned too"
