#!/usr/bin/env bash
# Enforce mode: `dcb pfc set dev eth0 prio-pfc 3:off` made behind the agent's
# back is undone, through the RTNLGRP_DCB notification (well inside the 30 s
# periodic pass), and roced_drift_detected_total rises on /metrics.
source "$(dirname "$0")/reconcile_lib.sh"
BOUND=${DRIFT_BOUND_S:-10}
rec_reset

rctl apply -f "$LOSSLESS" >/dev/null || fail "apply of lossless-prio3.yaml failed"
drift0=$(rec_metric roced_drift_detected_total)
lx "$REC_NODE" sh -c "echo 0 > $DCBT/calls"

# Change and poll in the guest (one exec): dcb -j pfc show until 3 is back on.
res=$(lsh "$REC_NODE" "
  dcb pfc set dev eth0 prio-pfc 3:off
  s=\$(date +%s%N)
  while :; do
    if dcb -j pfc show dev eth0 | grep -q '\"prio_pfc\":\[false,false,false,true,'; then echo corrected \$(( (\$(date +%s%N) - s) / 1000000 )); exit 0; fi
    [ \$(( (\$(date +%s%N) - s) / 1000000000 )) -ge $BOUND ] && { echo 'not corrected'; exit 0; }
  done") || fail "drift poll failed: $res"
[[ $res == corrected* ]] || fail "prio-pfc 3:off was not undone within $BOUND s (agent log: $("$LAB" logdir "$REC_NODE")/roced.log)"
ms=${res#corrected }

# The external SET really reached the driver, and so did the agent's.
setpfc=$(json_get "$(rec_calls)" "j['setpfc']")
((setpfc >= 2)) || fail "setpfc calls: want >= 2 (dcb's, then the agent's), got $setpfc"
drift1=$(rec_metric roced_drift_detected_total)
"$PY" -c "import sys; sys.exit(0 if float('$drift1') > float('$drift0') else 1)" ||
  fail "roced_drift_detected_total did not rise: $drift0 -> $drift1"
expect_eq "status qos.pfc" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$(rec_status)" eth0 qos.pfc)"
pass "corrected; seen by dcb -j in the guest after ${ms} ms (incl. dcb's own ~0.1 s start); drift_detected $drift0 -> $drift1"
