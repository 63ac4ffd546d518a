#!/usr/bin/env bash
# A removed RDMA device fails probes with device_unavailable while the agent
# keeps serving, the agent does not hold the removal up (rxe cannot
# disassociate user contexts: `rdma link delete` waits for every open one),
# and probing resumes when the device returns.
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
restore_rxe() { lx node1 sh -c 'rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev eth0' >/dev/null 2>&1 || true; }
trap restore_rxe EXIT

pctl node1 -o json probe node2 --iterations 10 >/dev/null || fail "probe before the removal failed"
start=$(date +%s.%N)
LX_TIMEOUT=60 lx node1 rdma link delete rxe0 || fail "rdma link delete rxe0 did not finish within 60 s (a context held open?)"
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
log "rxe0 removed in ${took} s with roced running"

rc=0
out=$(pctl node1 -o json probe node2 --iterations 10) || rc=$?
expect_eq "probe exit status without a device" 1 "$rc"
expect_eq "failure_reason" device_unavailable "$(json_get "$out" "j['failureReason']")"
rc=0
out=$(pctl node2 -o json probe node1 --iterations 10) || rc=$?
expect_eq "failure_reason probing the node without a device" peer_device_unavailable \
  "$(json_get "$out" "j['failureReason']")"
pctl node1 -o json status >/dev/null || fail "node1's agent stopped serving after the removal"

lx node1 rdma link add rxe0 type rxe netdev eth0 || fail "rdma link add rxe0 failed"
ok=0
for _ in $(seq 15); do  # the agent re-discovers on netlink events, at the latest every 10 s
  out=$(pctl node1 -o json probe node2 --iterations 10) && { ok=1; break; }
  sleep 2
done
((ok)) || { echo "$out"; fail "probing did not resume after rxe0 came back"; }
pass "removal took ${took} s; device_unavailable / peer_device_unavailable; resumed after rxe-add"
