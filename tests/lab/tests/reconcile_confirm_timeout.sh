#!/usr/bin/env bash
# `rocectl apply --confirm-timeout 3s` without `rocectl confirm`: the new
# config is in force at once, and after the deadline the agent goes back to
# the previous accepted config by itself (node state identical to before,
# config source CONFIRM_TIMEOUT), not earlier. Then the same from a config
# that manages nothing: the rollback also undoes the fields only the
# provisional config managed (PFC, DSCP, ETS, ECN, ToS back to the baseline).
# The first read that shows the provisional config in force is timed on
# node1's clock against the deadline the agent reports: a read after the
# deadline fails the test instead of being excused.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

rctl apply -f "$LOSSLESS" >/dev/null || fail "apply of A (lossless-prio3.yaml) failed"
state_a=$(rec_snapshot)

out=$(rctl apply --confirm-timeout 3s -f "$PRIO4") || fail "provisional apply failed: $out"
t0=$(date +%s.%N)
# The deadline, on node1's clock (status, read at once over gRPC from the host).
dl=$(json_get "$(rec_status)" "__import__('datetime').datetime.fromisoformat(j['config']['confirmDeadline'].replace('Z', '+00:00')).timestamp() if 'confirmDeadline' in j['config'] else 'none'")
grep -q "^Provisional" <<<"$out" || fail "rocectl did not say the config is provisional:
$out"
grep -A5 "~ eth0 qos.pfc$" <<<"$out" | grep -q "= applied" || fail "the provisional PFC step was not applied:
$out"
[[ $dl != none ]] || fail "status shows no confirm deadline right after the provisional apply (already rolled back $(elapsed "$t0") s after it?)"
# The first read, timed on the same clock just after dcb answered: it must
# be before the deadline, else it cannot show the provisional config in
# force (the rollback may already have run).
read_at=$(lx "$REC_NODE" bash -c 'dcb -j pfc show dev eth0; echo; echo $EPOCHREALTIME')
pfc=$(head -n 1 <<<"$read_at")
t_read=$(tail -n 1 <<<"$read_at")
in_force=$(elapsed "$t0")
"$PY" -c "import sys; sys.exit(0 if $t_read < $dl else 1)" ||
  fail "the first read of the node came ${in_force} s after the apply, $("$PY" -c "print(f'{$t_read - $dl:.2f}')") s past the deadline: cannot show the provisional config was in force"
[[ $(json_get "$pfc" "j['prio_pfc'][4]") == True ]] ||
  fail "PFC ${in_force} s after the provisional apply ($("$PY" -c "print(f'{$dl - $t_read:.2f}')") s before the deadline) is not the provisional one: $pfc"
log "provisional PFC 4 read ${in_force} s after the apply, $("$PY" -c "print(f'{$dl - $t_read:.2f}')") s before the deadline"

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
