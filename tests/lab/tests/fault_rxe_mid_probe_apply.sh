#!/usr/bin/env bash
# Fault matrix: node1's RDMA device (rxe0) removed and re-added
# in the middle of an apply and in the middle of a probe.
#  1. Apply: lossless-prio3 (reconcile every 2 s) is in force; an apply of
#     the prio-4 config is stopped after its first DSCP SET (SIGSTOP, see
#     rec_apply_interrupted), `rdma link delete rxe0` is started (it waits
#     for the agent to close its verbs context), and the apply goes on: its
#     rdma_cm ToS step on rxe0 fails, so the apply fails and rolls back
#     (rocectl exits 1 naming the step; generation and desired config kept;
#     eth0's DCB, ECN and trust exactly as before), the removal completes,
#     and the agent keeps serving. After `rdma link add rxe0` (a fresh
#     device, ToS 0) the agent notices the device, logs it, and puts the
#     ToS back: the whole node equals lossless-prio3 again.
#  2. Probe: a 4 s bandwidth probe node1 -> node2 is running (its 128 KiB
#     MR seen in `rdma res`) when rxe0 is deleted: the probe must fail with a clear
#     reason (not succeed on a device removed under it, not hang), the
#     deletion must complete, the agent keeps serving; once rxe0 is back
#     probes work again, and the QP/CQ/MR/PD counts on both nodes return to
#     where they were.
source "$(dirname "$0")/reconcile_lib.sh"
source "$(dirname "$0")/probe_lib.sh"
rec_on_cleanup 'lx node1 pkill -CONT -x roced'
rec_on_cleanup 'data_nic_restore node1'
rec_reset

# 1. Mid-apply.
A=$(cfg lossless-fast < <(cat "$LOSSLESS"; echo 'reconcile: {interval: 2s}'))
rctl apply -f "$A" >/dev/null || fail "apply of lossless-prio3 failed"
gen=$(rec_generation)
state_a=$(rec_snapshot)
mark=$(log_mark "$REC_NODE")
rec_apply_interrupted "$PRIO4" '(rdma link delete rxe0; echo "deleted rc $?") > /tmp/rxe-del.out 2>&1 &
sleep 0.5'
log "apply with rxe0 deleted mid-way: rocectl exit $REC_RC"
printf '%s\n' "$REC_OUT" | sed 's/^/    /'
((REC_RC == 3)) || fail "rocectl apply exit status $REC_RC (want 3: a step on the removed device failed)"
grep -A4 'rxe0/1 roce.default_tos' <<<"$REC_OUT" | grep -q 'FAILED' ||
  fail "rocectl does not say the rxe0 step failed"
deadline=$((SECONDS + 20))
until lx "$REC_NODE" grep -q 'deleted rc 0' /tmp/rxe-del.out 2>/dev/null; do
  ((SECONDS < deadline)) || fail "rdma link delete rxe0 did not complete 20 s after the apply: $(lx "$REC_NODE" cat /tmp/rxe-del.out)"
  sleep 0.5
done
st=$(rec_status)
expect_eq "accepted generation after the failed apply" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
expect_eq "desired PFC after the failed apply" "[3]" \
  "$(json_get "$st" "j['config']['desired']['interfaces'][0]['qos']['pfc']['priorities']")"
expect_same_state "eth0 after the failed apply (rolled back)" \
  "$(snap_drop "$state_a" roce_mode roce_tos)" "$(rec_snapshot)"
line=$(expect_log "$REC_NODE" "$mark" 'apply: rxe0/1 roce\.default_tos: .*rolling back' "the failed step in the agent's log")
log "agent log: $line"

lx "$REC_NODE" rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0 failed"
back=$(rec_wait_state "$state_a" 25 "node after rxe0 came back")
st=$(rec_wait_converged 10 "after rxe0 came back")
expect_eq "accepted generation after rxe0 came back" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
expect_log "$REC_NODE" "$mark" 'device rxe0: KIND_ADDED' "rxe0's return in the agent's log" >/dev/null
log "rxe0 back: lossless-prio3 (ToS 106) enforced on it again ${back} s later"

# 2. Mid-probe (by address: the accepted config has no probes.peers).
peer="$("$LAB" addr node2):7471"
base1=$(idle_res node1)
base2=$(idle_res node2)
t0=$(date +%s.%N)
(
  rc=0
  pctl node1 -o json probe "$peer" --kind bandwidth --duration 4s >"$REC_TMP/probe.json" 2>"$REC_TMP/probe.err" || rc=$?
  echo "$rc $(elapsed "$t0")" >"$REC_TMP/probe.rc"
) &
prober=$!
deadline=$((SECONDS + 15))
until has_mr node1 65536; do
  [[ ! -e $REC_TMP/probe.rc ]] || fail "the probe ended before its MR was seen: $(cat "$REC_TMP/probe.rc") $(cat "$REC_TMP/probe.json" "$REC_TMP/probe.err")"
  ((SECONDS < deadline)) || fail "the bandwidth probe's MR never showed on node1"
  sleep 0.2
done
at=$(elapsed "$t0")
t1=$(date +%s.%N)
LX_TIMEOUT=60 lx node1 rdma link delete rxe0 || fail "rdma link delete rxe0 did not complete within 60 s during a probe"
del_s=$(elapsed "$t1")
wait "$prober"
read -r prc ptook <"$REC_TMP/probe.rc"
out=$(cat "$REC_TMP/probe.json")
log "rxe0 deleted ${at} s into the 4 s probe; the deletion took ${del_s} s; rocectl probe exit $prc after ${ptook} s"
pctl node1 -o json status >/dev/null || fail "node1's agent stopped serving after the removal"
problem=""
if [[ $(json_get "$out" "j.get('success', False)") == True ]]; then
  problem="the probe reported success on a device deleted ${at} s into it ($(json_get "$out" "j['bandwidth']['messages']") messages; the deletion waited ${del_s} s for the probe to end)"
else
  reason=$(json_get "$out" "j.get('failureReason', '')")
  log "probe failed: $reason ($(json_get "$out" "j.get('failureDetail', '')"))"
  [[ -n $reason && $reason != internal ]] || problem="the probe failed with no clear reason: '$reason'"
fi

lx node1 rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0 failed"
ok=0
for _ in $(seq 15); do
  out=$(pctl node1 -o json probe "$peer" --iterations 10) && { ok=1; break; }
  sleep 1
done
((ok)) || fail "probing did not resume after rxe0 came back: $(json_get "$out" "j.get('failureReason')")"
res_back node1 "$base1" 15 || fail "node1: rxe0 resources $(res_counts node1), before the probe $base1:
$(res_detail node1)"
res_back node2 "$base2" 15 || fail "node2: rxe0 resources $(res_counts node2), before the probe $base2:
$(res_detail node2)"
[[ -z $problem ]] || fail "$problem"
pass "mid-apply: failed on the rxe0 step, rolled back, generation $gen kept, ToS back ${back} s after rxe0 returned; mid-probe: $reason; resources back to '$base1' / '$base2'"
