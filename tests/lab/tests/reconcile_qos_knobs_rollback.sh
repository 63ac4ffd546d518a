#!/usr/bin/env bash
# A refused write of one of the QoS knobs (buffers, PFC prevention,
# CNP/DCQCN) rolls the apply back: with the test NIC refusing DCQCN
# parameter writes (refuse_cc), the PFC, buffer and
# PFC prevention steps before it are undone; with it refusing the tunable
# (refuse_tunable), the buffer step; with it refusing buffers
# (refuse_buffer), the PFC step. Each time the node (rec_snapshot and the
# knobs) is identical before and after, rocectl exits 1 naming the refused
# step, the generation stays. Buffer sizes beyond the port's total are
# refused by the agent with both figures, also rolled back.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

# KNOBS: reconcile_lib.sh
gen=$(rec_generation)
# refused CONTROL FAILED-STEP 'ROLLED-BACK STEPS' [CONFIG]
refused() {
  local control=$1 failed=$2 rolled=$3 file=${4:-$KNOBS} before knobs rc=0 out f
  [[ -z $control ]] || lx "$REC_NODE" sh -c "echo 1 > $DCBT/$control"
  before=$(rec_snapshot)
  knobs=$(rec_knobs)
  out=$(rctl apply -f "$file" 2>&1) || rc=$?
  [[ -z $control ]] || lx "$REC_NODE" sh -c "echo 0 > $DCBT/$control"
  expect_eq "rocectl apply exit status (${control:-oversize})" 3 "$rc"
  grep -q "Apply failed; every step was rolled back" <<<"$out" || fail "${control:-oversize}: no rollback said:
$out"
  grep -A4 "~ eth0 $failed\$" <<<"$out" | grep -q "= FAILED" || fail "${control:-oversize}: $failed is not the FAILED step:
$out"
  for f in $rolled; do
    grep -A4 "~ eth0 $f\$" <<<"$out" | grep -q "= rolled back" || fail "${control:-oversize}: $f not rolled back:
$out"
  done
  expect_same_state "${control:-oversize}: DCB, ECN, MTU" "$before" "$(rec_snapshot)"
  expect_same_state "${control:-oversize}: knobs" "$knobs" "$(rec_knobs)"
  LAST_OUT=$out
}
refused refuse_cc qos.dcqcn.cnp_dscp "qos.pfc qos.buffers qos.pfc_prevention"
refused refuse_tunable qos.pfc_prevention "qos.pfc qos.buffers"
refused refuse_buffer qos.buffers "qos.pfc"
grep -q "set port buffer refused by the driver" <<<"$LAST_OUT" || fail "refuse_buffer: no driver refusal in:
$LAST_OUT"
OVER=$(sed 's/size_bytes: \[196608, 262144,/size_bytes: [400000, 262144,/' "$KNOBS" | cfg over)
refused "" qos.buffers "qos.pfc" "$OVER"
grep -q "qos.buffers.size_bytes sum to 662144 bytes; the port's buffer holds 524288" <<<"$LAST_OUT" ||
  fail "oversize: the error does not give both figures:
$LAST_OUT"
expect_eq "accepted generation" "$gen" "$(rec_generation)"
pass "refuse_cc, refuse_tunable, refuse_buffer and an oversize layout: each rolled back, node identical"
