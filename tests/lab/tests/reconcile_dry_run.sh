#!/usr/bin/env bash
# `rocectl apply --dry-run` of a different file prints its plan (every step
# it would take), exits 1 (a difference, as diff(1)) and changes nothing:
# same node state, no DCB SET reached the driver, same accepted generation.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

rctl apply -f "$LOSSLESS" >/dev/null || fail "apply of lossless-prio3.yaml failed"
gen=$(rec_generation)
lx "$REC_NODE" sh -c "echo 0 > $DCBT/calls"
before=$(rec_snapshot)
calls_before=$(rec_calls)

rc=0
out=$(rctl apply --dry-run -f "$PRIO4") || rc=$?
expect_eq "dry-run exit status with a difference (1, as diff(1))" 1 "$rc"
grep -q "dry run, nothing changed" <<<"$out" || fail "no dry-run plan printed:
$out"
for f in qos.dscp_to_priority qos.ets qos.pfc qos.ecn.np_priorities qos.ecn.rp_priorities; do
  grep -q "~ eth0 $f\$" <<<"$out" || fail "the dry-run plan lacks the $f step:
$out"
done
grep -q "priorities \[4\]" <<<"$out" || fail "the plan does not show PFC priority 4 as wanted:
$out"
grep -qE "= (applied|rolled back|FAILED)" <<<"$out" && fail "a dry run reported step outcomes:
$out"

expect_eq "DCB calls during the dry run" "$calls_before" "$(rec_calls)"
expect_same_state "dry run" "$before" "$(rec_snapshot)"
expect_eq "accepted generation after the dry run" "$gen" "$(rec_generation)"
# Reading the rdma_cm defaults needs the device's configfs group; a dry run
# (like observe mode) must read them without leaving one behind.
CM_DEV=/sys/kernel/config/rdma_cm/rxe0
# The lab mounts configfs with rdma_cm loaded (stage2.sh); without it this
# check cannot run, which is a skip (a failure in CI), not a pass.
lx "$REC_NODE" test -d /sys/kernel/config/rdma_cm ||
  skip "node, DCB calls and generation unchanged, but node1 has no configfs rdma_cm: the rdma_cm group check is not tested"
lsh "$REC_NODE" "rmdir $CM_DEV 2>/dev/null || true"
rc=0
out=$(rctl apply --dry-run -f "$PRIO4") || rc=$?
expect_eq "dry-run exit status without the rdma_cm group" 1 "$rc"
grep -q "roce.default_tos" <<<"$out" || fail "the dry run did not read roce.default_tos:
$out"
lx "$REC_NODE" test ! -e "$CM_DEV" || fail "the dry run left $CM_DEV behind"
lsh "$REC_NODE" "mkdir -p $CM_DEV" || fail "could not recreate $CM_DEV"
pass "$(grep -c '^  ~ ' <<<"$out") planned steps; node, DCB calls and generation unchanged; no rdma_cm group left by reading"
