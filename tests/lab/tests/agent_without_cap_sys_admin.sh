#!/usr/bin/env bash
# The agent does its whole job without CAP_SYS_ADMIN: node1's roced is
# restarted under `capsh --drop=cap_sys_admin` (the capability gone from its
# bounding set, so it never holds it), checked in /proc/PID/status, and then
# applies lossless-prio3.yaml plus a hugepage pool on the real kernel (DCB
# netlink, ECN sysfs, configfs rdma_cm, nr_hugepages), verifies every field
# in sync, and runs latency and bandwidth probes to node2 with its buffer on
# a hugepage, with no "Operation not permitted" in its log. node1's agent
# is restarted as usual afterwards. (The unit and the DaemonSet grant
# CAP_NET_ADMIN and CAP_IPC_LOCK besides; root in the guest holds the rest.)
source "$(dirname "$0")/reconcile_lib.sh"
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
HP=/sys/kernel/mm/hugepages/hugepages-2048kB
log_file="$("$LAB" logdir node1)/roced.log"
restart_plain() {
  "$LAB" agent stop node1 >/dev/null 2>&1 || true
  "$LAB" agent start node1 >/dev/null 2>&1 || true
}
trap 'rctl apply -f "$("$LAB" logdir node1)/roced.yaml" >/dev/null 2>&1; lsh node1 "echo 0 > $HP/nr_hugepages" >/dev/null 2>&1; restart_plain' EXIT

"$LAB" agent stop node1 >/dev/null || fail "could not stop node1's agent"
lines_before=$(wc -l <"$log_file")
LAB_AGENT_CAPS_DROP=cap_sys_admin "$LAB" agent start node1 >/dev/null || fail "roced did not start without CAP_SYS_ADMIN"
# Bit 21 is CAP_SYS_ADMIN; neither the bounding nor the effective set has it.
caps=$(lsh node1 'p=$(pgrep -x roced); grep -E "^Cap(Bnd|Eff):" /proc/$p/status')
for set in CapBnd CapEff; do
  hex=$(awk -v s="$set:" '$1 == s {print $2}' <<<"$caps")
  [[ -n $hex ]] || fail "no $set for roced: $caps"
  (( (0x$hex >> 21) & 1 )) && fail "roced's $set still holds CAP_SYS_ADMIN: $caps"
done
log "roced runs without CAP_SYS_ADMIN: $(tr '\n' ' ' <<<"$caps")"

rec_reset
{ cat "$LOSSLESS"; printf 'hugepages:\n  - {size: 2Mi, count: 4}\n'; } | cfg nocap >/dev/null
out=$(rctl apply -f "$REC_TMP/nocap.yaml") || fail "apply without CAP_SYS_ADMIN failed: $out"
st=$(rec_status)
for f in qos.dscp_to_priority qos.ets qos.pfc qos.ecn.np_priorities qos.ecn.rp_priorities; do
  expect_eq "status $f" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" eth0 $f)"
done
expect_eq "status hugepages" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" hugepages-2048kB hugepages.count)"
if lx node1 test -d "$RDMA_CM"; then
  expect_eq "status roce.default_tos (configfs)" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" rxe0/1 roce.default_tos)"
fi
expect_eq "2 MiB pages reserved" 4 "$(lx node1 cat $HP/nr_hugepages)"
expect_eq "converged" True "$(json_get "$st" "j['config'].get('converged', False)")"

# Probes: the lab's own config (probes.peers) with the same pool.
lab_cfg="$("$LAB" logdir node1)/roced.yaml"
{ cat "$lab_cfg"; printf 'hugepages:\n  - {size: 2Mi, count: 4}\n'; } | cfg nocap-probes >/dev/null
out=$(rctl apply -f "$REC_TMP/nocap-probes.yaml") || fail "apply of the lab config without CAP_SYS_ADMIN failed: $out"
lat=$(pctl node1 -o json probe node2 --iterations 50) || fail "latency probe without CAP_SYS_ADMIN failed: $lat"
expect_eq "latency probe success" True "$(json_get "$lat" "j['success']")"
expect_eq "latency buffer on a hugepage" True "$(json_get "$lat" "j.get('bufferHugepages', False)")"
bw=$(pctl node1 -o json probe node2 --kind bandwidth --duration 2s) || fail "bandwidth probe without CAP_SYS_ADMIN failed: $bw"
expect_eq "bandwidth probe success" True "$(json_get "$bw" "j['success']")"
if tail -n +"$((lines_before + 1))" "$log_file" | grep -i "operation not permitted\|EPERM"; then
  fail "roced logged a permission error without CAP_SYS_ADMIN (above)"
fi
pass "PFC, DSCP, ETS, ECN, rdma_cm and hugepages applied and in sync, latency and bandwidth probes on hugepage buffers, all without CAP_SYS_ADMIN"
