#!/usr/bin/env bash
# The DCB test NIC through the kernel's real dcbnl, with iproute2's `dcb -j`
# and the module's sysfs as independent clients: PFC, app table, ETS, DCBX and
# buffer round trips; a pfc_en change counts one link flap (an unchanged one
# none); refused SETs leave the state as it was; and `dcb` on NICs without the
# module answers "Operation not supported".
source "$(dirname "$0")/lib.sh"
require_lab
C=/sys/class/net/eth0/dcbtest

lsh node1 "echo 1 > $C/reset; rm -f /run/lab-dcb-reruns"

# --- PFC
lsh node1 "dcb pfc set dev eth0 prio-pfc all:off 3:on 5:on delay 30"
j=$(lx node1 dcb -j pfc show dev eth0)
expect_eq "prio_pfc after set" "[False, False, False, True, False, True, False, False]" "$(json_get "$j" 'j["prio_pfc"]')"
expect_eq "pfc delay (cable length)" 30 "$(json_get "$j" 'j["delay"]')"
expect_eq "pfc_cap" 8 "$(json_get "$j" 'j["pfc_cap"]')"
expect_eq "link flaps after one pfc_en change" 1 "$(lx node1 cat $C/link_flaps)"
lsh node1 "dcb pfc set dev eth0 prio-pfc 3:on 5:on"
expect_eq "link flaps after an unchanged pfc_en" 1 "$(lx node1 cat $C/link_flaps)"
j=$(lx node1 dcb -s -j pfc show dev eth0)
expect_eq "pfc requests (stats)" "[0, 0, 0, 0, 0, 0, 0, 0]" "$(json_get "$j" 'j["requests"]')"

# A refused PFC SET: iproute2's dcb exits 0 (the kernel acks the SET and puts
# the driver's error in a u8 attribute), so only a read-back shows it.
lsh node1 "echo 1 > $C/refuse_pfc; dcb pfc set dev eth0 prio-pfc 4:on || true; echo 0 > $C/refuse_pfc"
j=$(lx node1 dcb -j pfc show dev eth0)
expect_eq "prio_pfc after a refused set" "[False, False, False, True, False, True, False, False]" "$(json_get "$j" 'j["prio_pfc"]')"
# The guest's dcb wrapper reruns a set that met iproute2 6.1's stale ACK
# (tests/lab/guest/dcb): the driver sees that one twice.
reruns=$(lx node1 sh -c "grep -c '^pfc set ' /run/lab-dcb-reruns 2>/dev/null || true")
expect_eq "setpfc calls (3 sets, one refused, ${reruns:-0} rerun by the dcb wrapper)" "setpfc $((3 + ${reruns:-0}))" \
  "$(lx node1 grep setpfc $C/calls)"

# --- app table (DSCP)
lsh node1 "dcb app add dev eth0 dscp-prio 26:3 48:6"
j=$(lx node1 dcb -j app show dev eth0)
expect_eq "dscp_prio after add" "[[26, 3], [48, 6]]" "$(json_get "$j" 'sorted(j["dscp_prio"])')"
expect_eq "module's dscp2prio" "26 3,48 6" "$(lx node1 cat $C/dscp2prio | paste -sd,)"
# mlx5 rejects non-DSCP selectors
if out=$(lx node1 dcb app add dev eth0 ethtype-prio 0x8915:3 2>&1); then fail "ethtype app entry accepted: $out"; fi
lsh node1 "echo 1 > $C/refuse_app"
if out=$(lx node1 dcb app add dev eth0 dscp-prio 10:1 2>&1); then fail "refused app add succeeded"; fi
grep -q "Input/output error" <<<"$out" || fail "refused app add: want EIO, got: $out"
lsh node1 "echo 0 > $C/refuse_app"
lsh node1 "dcb app del dev eth0 dscp-prio 26:3 48:6"
j=$(lx node1 dcb -j app show dev eth0)
expect_eq "app table after del" "[]" "$(json_get "$j" 'j.get("dscp_prio", [])')"

# --- ETS
lsh node1 "dcb ets set dev eth0 tc-tsa all:strict 0:ets 1:ets tc-bw all:0 0:60 1:40 prio-tc all:0 3:1 5:1"
j=$(lx node1 dcb -j ets show dev eth0)
# strict classes read back at 100%, as mlx5 reports them (dcb_ets_as_mlx5)
expect_eq "tc_bw" "[60, 40, 100, 100, 100, 100, 100, 100]" "$(json_get "$j" 'j["tc_bw"]')"
expect_eq "tc_tsa" "['ets', 'ets', 'strict', 'strict', 'strict', 'strict', 'strict', 'strict']" "$(json_get "$j" 'j["tc_tsa"]')"
expect_eq "prio_tc" "[0, 0, 0, 1, 0, 1, 0, 0]" "$(json_get "$j" 'j["prio_tc"]')"
lsh node1 "echo 1 > $C/refuse_ets; dcb ets set dev eth0 tc-tsa all:strict || true; echo 0 > $C/refuse_ets"
j=$(lx node1 dcb -j ets show dev eth0)
expect_eq "tc_bw after a refused set" "[60, 40, 100, 100, 100, 100, 100, 100]" "$(json_get "$j" 'j["tc_bw"]')"

# --- DCBX and buffer
j=$(lx node1 dcb -j dcbx show dev eth0)
expect_eq "dcbx mode (host ieee cee)" "True True True" "$(json_get "$j" '" ".join(str(j.get(k)) for k in ("host", "ieee", "cee"))')"
lsh node1 "dcb buffer set dev eth0 prio-buffer all:0 3:1 buffer-size all:0 0:200K 1:100K"
j=$(lx node1 dcb -j buffer show dev eth0)
expect_eq "prio_buffer" "[0, 0, 0, 1, 0, 0, 0, 0]" "$(json_get "$j" 'j["prio_buffer"]')"
expect_eq "buffer_size" "[204800, 102400]" "$(json_get "$j" 'j["buffer_size"][:2]')"

# --- NICs without the module
for dev in labmgmt lo; do
  if out=$(lx node1 dcb pfc show dev $dev 2>&1); then fail "dcb pfc show dev $dev succeeded: $out"; fi
  grep -q "Operation not supported" <<<"$out" || fail "dcb on $dev: want 'Operation not supported', got: $out"
done
# node2's eth0 has the module too, independently of node1's
j=$(lx node2 dcb -j pfc show dev eth0)
expect_eq "node2 prio_pfc (untouched)" "[False, False, False, False, False, False, False, False]" "$(json_get "$j" 'j["prio_pfc"]')"

lsh node1 "echo 1 > $C/reset; rm -f /run/lab-dcb-reruns"
pass
