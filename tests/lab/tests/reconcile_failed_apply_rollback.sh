#!/usr/bin/env bash
# An apply that fails half-way leaves the node exactly as it was: with the
# test NIC refusing PFC SETs, the MTU, DSCP map and ETS steps that went
# through before it are rolled back (full dcb -j dumps, ECN, trust and MTU
# equal before/after), rocectl exits 1 saying so, the generation stays.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

cfgfile=$( (echo "# lossless-prio3.yaml with an MTU change in front"; sed 's/^  - match: {netdev: eth0}$/&\n    mtu: 4200/' "$LOSSLESS") | cfg lossless-mtu)
grep -q "mtu: 4200" "$cfgfile" || fail "could not add the MTU to the config"
gen=$(rec_generation)
lsh "$REC_NODE" "echo 1 > $DCBT/refuse_pfc; echo 0 > $DCBT/calls"
before=$(rec_snapshot)

rc=0
out=$(rctl apply -f "$cfgfile" 2>&1) || rc=$?
lx "$REC_NODE" sh -c "echo 0 > $DCBT/refuse_pfc"
expect_eq "rocectl apply exit status" 3 "$rc"
grep -q "Apply failed; every step was rolled back" <<<"$out" || fail "rocectl did not say it rolled back:
$out"
grep -q "= FAILED: eth0: set PFC refused by the driver" <<<"$out" || fail "the PFC step is not the FAILED one:
$out"
for f in mtu qos.dscp_to_priority qos.ets; do
  grep -A4 "~ eth0 $f\$" <<<"$out" | grep -q "= rolled back" || fail "step $f not reported rolled back:
$out"
done

expect_same_state "failed apply" "$before" "$(rec_snapshot)"
calls=$(rec_calls)
# Proof that something was written and undone, not merely skipped.
"$PY" -c "import json,sys; c=json.loads(sys.argv[1]); sys.exit(0 if c['setapp'] >= 1 and c['delapp'] >= 1 and c['setets'] >= 2 else 1)" "$calls" ||
  fail "DCB calls do not show the DSCP/ETS writes and their undo: $calls"
expect_eq "accepted generation" "$gen" "$(rec_generation)"
pass "PFC refused; MTU, DSCP, ETS rolled back; node identical; calls $calls"
