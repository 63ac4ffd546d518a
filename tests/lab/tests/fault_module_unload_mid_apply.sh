#!/usr/bin/env bash
# Fault matrix: the NIC driver's DCB support goes away in the
# middle of an apply. lossless-prio3 (reconcile every 3 s) is in force; an
# apply of another config (prio 4) is stopped right after its first DSCP SET
# reached the driver, the DCB test module is unloaded (rmmod: eth0 loses its
# dcbnl ops, its app entries and the ECN files), and the apply goes on.
#  - The apply fails (rocectl exits 1 and says which steps failed) and is
#    not accepted: generation and desired config unchanged; what it wrote
#    outside the module (rdma_cm ToS) is rolled back.
#  - The agent keeps serving and says what is wrong: status not converged,
#    eth0's DCB fields not in sync with a reason.
#  - After the module is loaded again (a fresh NIC: every DCB setting at its
#    default), the periodic pass puts lossless-prio3 back by itself: the
#    node read with dcb -j and sysfs equals what it was before the apply, and
#    the agent logged the drift it corrected.
# Why a stop (SIGSTOP) and not a delay: the test NIC has no write delay, and
# an apply takes ~0.1 s; stopping the agent between two of its netlink calls
# makes the fault land mid-apply every time, and the agent does not notice
# the pause (its gRPC deadline is 60 s).
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset
rec_on_cleanup 'lx node1 pkill -CONT -x roced'
rec_on_cleanup 'data_nic_restore node1'

A=$(cfg lossless-fast < <(cat "$LOSSLESS"; echo 'reconcile: {interval: 3s}'))
rctl apply -f "$A" >/dev/null || fail "apply of lossless-prio3 failed"
gen=$(rec_generation)
state_a=$(rec_snapshot)
mark=$(log_mark "$REC_NODE")

rec_apply_interrupted "$PRIO4" 'rmmod roce_dcbtest && echo unloaded'
grep -q '^unloaded' <<<"$REC_FAULT_OUT" || fail "rmmod failed: $REC_FAULT_OUT"
log "apply with the module unloaded mid-way: rocectl exit $REC_RC"
printf '%s\n' "$REC_OUT" | sed 's/^/    /'
((REC_RC == 3)) || fail "rocectl apply exit status $REC_RC (want 3: the apply failed)"
grep -qiE 'fail|not supported|rolled back' <<<"$REC_OUT" || fail "rocectl does not say the apply failed:
$REC_OUT"

# Keeps serving, lost nothing, says what is wrong.
st=$(rec_status)
expect_eq "accepted generation after the failed apply" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
expect_eq "desired PFC after the failed apply" "[3]" \
  "$(json_get "$st" "j['config']['desired']['interfaces'][0]['qos']['pfc']['priorities']")"
expect_eq "converged without the module" False "$(json_get "$st" "j['config'].get('converged', False)")"
pfc_sync=$(rec_field_sync "$st" eth0 qos.pfc)
[[ $pfc_sync != FIELD_SYNC_IN_SYNC && $pfc_sync != ABSENT ]] || fail "eth0 qos.pfc is $pfc_sync without the module"
why=$(json_get "$st" "next(f.get('message', '') for f in j['fields'] if f.get('field') == 'qos.pfc')")
[[ -n $why ]] || fail "eth0 qos.pfc is $pfc_sync with no message"
log "without the module: qos.pfc $pfc_sync ($why)"
line=$(expect_log "$REC_NODE" "$mark" 'apply: eth0 .*' "the agent's log line for the failed apply")
log "agent log: $line"
if lx "$REC_NODE" test -d "$RDMA_CM"; then
  expect_eq "rdma_cm ToS after the failed apply (outside the module: skipped or rolled back)" 106 \
    "$(lx "$REC_NODE" cat "$RDMA_CM/default_roce_tos")"
fi

# The module comes back as a fresh NIC: the periodic pass restores A.
lsh "$REC_NODE" ". /lab/node.env; insmod \$KCACHE/module/roce_dcbtest.ko $DCBT_PARAMS"
took=$(rec_wait_state "$state_a" 20 "node not back to lossless-prio3 after the module was reloaded")
st=$(rec_status)
expect_eq "accepted generation after the reload" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
expect_eq "converged after the reload" True "$(json_get "$st" "j['config'].get('converged', False)")"
line=$(expect_log "$REC_NODE" "$mark" 'drift \(.*\): [0-9]+ field\(s\) differ; correcting' "drift correction after the reload")
log "agent log: $line"
pass "apply failed with the module gone (generation $gen kept, agent serving, qos.pfc $pfc_sync); lossless-prio3 back ${took} s after the reload"
