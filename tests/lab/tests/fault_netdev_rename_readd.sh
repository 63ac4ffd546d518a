#!/usr/bin/env bash
# Fault matrix: the managed netdev goes away while lossless-prio3
# is enforced on it (reconcile every 2 s: an RDMA device that comes back is
# not announced on rtnetlink, so its roce.* fields wait for the periodic
# pass), and comes back.
#  1. Renamed: eth0 down, renamed ethX, PFC changed on it behind the agent's
#     back, renamed back and up. While it is away the agent keeps serving
#     (asked over its unix socket: the lab network runs over eth0) with the
#     same generation and says "no netdev 'eth0'" in status; once eth0 is
#     back it corrects the PFC change by itself (node equal to before, read
#     with dcb -j and sysfs) and logs the drift.
#  2. Removed and re-added: the data NIC's virtio device unbound from
#     virtio_net (eth0 unregistered; rxe0 on it goes too, and the DCB test
#     module stays loaded but detached) and bound again (a new eth0: same
#     MAC, no address, link down, offloads on, no DCB, no rxe0). The test
#     records what survived, then re-creates what lab setup does
#     (guest/stage2.sh: address, offloads off, the module, up, rxe0). The
#     agent, serving throughout with the same generation, reports rxe0
#     removed and added and enforces every field again (DCB, ECN, trust,
#     rdma_cm ToS), unasked.
# eth0 is put back as boot leaves it on exit (data_nic_restore), before the
# baseline is restored.
source "$(dirname "$0")/reconcile_lib.sh"
rec_on_cleanup 'data_nic_restore node1'
rec_reset

A=$(cfg lossless-fast < <(cat "$LOSSLESS"; echo 'reconcile: {interval: 2s}'))
rctl apply -f "$A" >/dev/null || fail "apply of lossless-prio3 failed"
gen=$(rec_generation)
state_a=$(rec_snapshot)

# sock_status_until WHAT PYTHON-EXPR SECS: status over the unix socket until
# EXPR (on j) holds; prints the last status.
sock_status_until() {
  local st deadline=$((SECONDS + $3))
  while :; do
    st=$(rsock "$REC_NODE" -o json status) || fail "$1: the agent does not answer on its unix socket"
    [[ $(json_get "$st" "$2") == True ]] && break
    ((SECONDS < deadline)) || fail "$1: not seen in $3 s; status fields: $(json_get "$st" "j.get('fields')")"
    sleep 0.5
  done
  printf '%s\n' "$st"
}
NO_ETH0="any(f.get('field') == 'interfaces' and f.get('sync') == 'FIELD_SYNC_FAILED' and \"no netdev 'eth0'\" in f.get('message', '') for f in j.get('fields', []))"

# 1. Rename.
mark=$(log_mark "$REC_NODE")
lsh "$REC_NODE" 'ip link set eth0 down; ip link set eth0 name ethX; dcb pfc set dev ethX prio-pfc 3:off'
st=$(sock_status_until "eth0 renamed: status says eth0 is missing" "$NO_ETH0" 15)
expect_eq "generation while eth0 is renamed" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
expect_eq "converged while eth0 is renamed" False "$(json_get "$st" "j['config'].get('converged', False)")"
lsh "$REC_NODE" 'ip link set ethX name eth0; ip link set eth0 up'
back1=$(rec_wait_state "$state_a" 20 "node after eth0 was renamed back")
line=$(expect_log "$REC_NODE" "$mark" 'drift \(.*\): [0-9]+ field\(s\) differ; correcting' "drift correction after the rename")
log "renamed back: PFC change made while it was ethX undone ${back1} s later; agent log: $line"
# The roce.* fields resolve through rxe0's netdev as discovery last saw it
# (ethX until its next run, which does not start a pass): converged can lag
# the node by up to a reconcile interval.
st=$(rec_wait_converged 15 "after the rename")
expect_eq "generation after the rename" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"

# 2. Unbind / bind.
vdev=$(lsh "$REC_NODE" 'd=$(readlink /sys/class/net/eth0/device); echo ${d##*/}')
mark=$(log_mark "$REC_NODE")
t0=$(date +%s.%N)
LX_TIMEOUT=60 lsh "$REC_NODE" "echo $vdev > /sys/bus/virtio/drivers/virtio_net/unbind" ||
  fail "unbinding $vdev from virtio_net failed or did not finish within 60 s"
unbind_s=$(elapsed "$t0")
gone=$(lsh "$REC_NODE" '
  [ -e /sys/class/net/eth0 ] && echo "eth0 still there"
  rdma link show rxe0/1 >/dev/null 2>&1 && echo "rxe0 survived" || echo "rxe0 gone"
  lsmod | grep -q "^roce_dcbtest " && echo "module loaded" || echo "module unloaded"' | paste -sd, -)
log "unbound $vdev in ${unbind_s} s: $gone"
grep -q 'eth0 still there' <<<"$gone" && fail "eth0 is still there after unbinding $vdev"
st=$(sock_status_until "eth0 removed: status says eth0 is missing and rxe0 gone" \
  "$NO_ETH0 and not any(d['name'] == 'rxe0' for d in j.get('devices', []))" 15)
expect_eq "generation while eth0 is removed" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"

lsh "$REC_NODE" "echo $vdev > /sys/bus/virtio/drivers/virtio_net/bind"
readd=$(lsh "$REC_NODE" '
  . /lab/node.env
  for i in $(seq 50); do
    for d in /sys/class/net/*; do read -r a < $d/address; [ "$a" = "$DATA_MAC" ] && nd=${d##*/}; done
    [ -n "$nd" ] && break; sleep 0.1
  done
  echo "netdev ${nd:-none}"
  rdma link show rxe0/1 >/dev/null 2>&1 && echo "rxe0 back" || echo "no rxe0"
  [ -d /sys/class/net/$nd/dcbtest ] && echo "DCB test NIC attached" || echo "no DCB (module detached)"' | paste -sd, -)
log "bound again: $readd"
redone=$(data_nic_restore "$REC_NODE" | paste -sd, -) || fail "could not re-create eth0 as lab setup does"
log "re-created as lab setup does: ${redone:-nothing needed}"
back2=$(rec_wait_state "$state_a" 30 "node after eth0 was re-added")
st=$(rec_wait_converged 15 "after the re-add")
expect_eq "generation after the re-add" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
expect_eq "rxe0 in status after the re-add" True "$(json_get "$st" "any(d['name'] == 'rxe0' for d in j['devices'])")"
expect_log "$REC_NODE" "$mark" 'device rxe0: KIND_REMOVED' "rxe0's removal" >/dev/null
expect_log "$REC_NODE" "$mark" 'device rxe0: KIND_ADDED' "rxe0's return" >/dev/null
line=$(expect_log "$REC_NODE" "$mark" 'drift \(.*\): [0-9]+ field\(s\) differ; correcting' "drift correction after the re-add")
log "agent log: $line"
pass "rename: corrected ${back1} s after eth0 returned; unbind (${unbind_s} s; $gone) / bind ($readd): lossless-prio3 enforced again ${back2} s after re-creating eth0; generation $gen throughout"
