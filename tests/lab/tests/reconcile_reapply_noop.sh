#!/usr/bin/env bash
# Applying the state a node already has is an empty plan: rocectl prints
# "No changes" and not one DCB SET reaches the driver (dcbtest `calls`), and
# the node reads back the same.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

rctl apply -f "$LOSSLESS" >/dev/null || fail "first apply failed"
lx "$REC_NODE" sh -c "echo 0 > $DCBT/calls"
before=$(rec_snapshot)
calls_before=$(rec_calls)

out=$(rctl apply -f "$LOSSLESS") || fail "second apply failed: $out"
grep -q "^No changes" <<<"$out" || fail "second apply was not an empty plan:
$out"
grep -q "^  ~ " <<<"$out" && fail "second apply listed steps:
$out"
expect_eq "DCB calls during the second apply" "$calls_before" "$(rec_calls)"
expect_same_state "second apply" "$before" "$(rec_snapshot)"
pass "No changes; 0 DCB calls"
