#!/usr/bin/env bash
# Unloading the DCB test module gives eth0 back as it was (no dcbnl_ops: dcb
# answers "Operation not supported"; virtio_net's own ethtool stats only; no
# sysfs files; its app entries gone) and loading it again works. With flap_ms
# set, a pfc_en change really drops the carrier for that long.
source "$(dirname "$0")/lib.sh"
require_lab
C=/sys/class/net/eth0/dcbtest
KO=$(lx node1 sh -c '. /lab/node.env; echo $KCACHE/module/roce_dcbtest.ko')

reload() { lx node1 sh -c "lsmod | grep -q '^roce_dcbtest ' || insmod $KO $DCBT_PARAMS"; }
trap reload EXIT

lsh node1 "echo 1 > $C/reset; dcb app add dev eth0 dscp-prio 26:3"
with=$(lx node1 ethtool -S eth0 | wc -l)
lx node1 rmmod roce_dcbtest
out=$(lx node1 dcb pfc show dev eth0 2>&1) && fail "dcb pfc show succeeded without the module: $out"
grep -q "Operation not supported" <<<"$out" || fail "without the module: want 'Operation not supported', got: $out"
without=$(lx node1 ethtool -S eth0 | wc -l)
((without < with)) || fail "ethtool -S has $without lines without the module, $with with it"
grep -q prio3_pause <<<"$(lx node1 ethtool -S eth0)" && fail "prio counters still there after rmmod"
lx node1 test -e /sys/class/net/eth0/ecn && fail "ecn/ sysfs still there after rmmod"
lx node1 test -e $C && fail "dcbtest/ sysfs still there after rmmod"

lx node1 insmod "$KO" $DCBT_PARAMS
j=$(lx node1 dcb -j app show dev eth0)
expect_eq "app table after reload" "[]" "$(json_get "$j" 'j.get("dscp_prio", [])')"
expect_eq "ethtool -S lines after reload" "$with" "$(lx node1 ethtool -S eth0 | wc -l)"

got=$(lsh node1 "echo 1500 > $C/flap_ms; dcb pfc set dev eth0 prio-pfc 3:on; cat /sys/class/net/eth0/carrier; sleep 2.5; cat /sys/class/net/eth0/carrier; cat $C/link_flaps" | paste -sd' ')
expect_eq "carrier during / after a 1.5 s flap, flaps" "0 1 1" "$got"
lsh node1 "echo 1 > $C/reset"
lx node1 sh -c 'for i in $(seq 50); do rdma link show rxe0/1 | grep -q ACTIVE && exit 0; sleep 0.2; done; exit 1' ||
  fail "rxe0 not ACTIVE after the flap"
pass
