#!/usr/bin/env bash
# mlx5's trust behaviour on the DCB test NIC: the first DSCP app entry switches
# the port to DSCP trust, re-mapping a DSCP replaces its entry, deleting the
# last entry switches back to PCP, and deleting an entry that does not match
# is refused.
source "$(dirname "$0")/lib.sh"
require_lab
C=/sys/class/net/eth0/dcbtest

state() { lsh node2 "printf '%s %s\n' \$(cat $C/trust) \$(cat $C/dscp_app_cnt)"; }

lsh node2 "echo 1 > $C/reset"
expect_eq "initial trust" "pcp 0" "$(state)"
lsh node2 "dcb app add dev eth0 dscp-prio 26:3"
expect_eq "after the first DSCP entry" "dscp 1" "$(state)"
lsh node2 "dcb app add dev eth0 dscp-prio 10:1"
expect_eq "after a second entry" "dscp 2" "$(state)"
lsh node2 "dcb app add dev eth0 dscp-prio 26:4"
expect_eq "after re-mapping DSCP 26" "dscp 2" "$(state)"
j=$(lx node2 dcb -j app show dev eth0)
expect_eq "app table after re-map" "[[10, 1], [26, 4]]" "$(json_get "$j" 'sorted(j["dscp_prio"])')"
if lx node2 dcb app del dev eth0 dscp-prio 26:3 >/dev/null 2>&1; then
  fail "deleting a stale mapping (26:3) succeeded"
fi
lsh node2 "dcb app del dev eth0 dscp-prio 26:4"
expect_eq "after deleting one of two" "dscp 1" "$(state)"
lsh node2 "dcb app del dev eth0 dscp-prio 10:1"
expect_eq "after deleting the last entry" "pcp 0" "$(state)"
j=$(lx node2 dcb -j app show dev eth0)
expect_eq "app table at the end" "[]" "$(json_get "$j" 'j.get("dscp_prio", [])')"
pass "pcp -> dscp on the first entry, back to pcp on the last"
