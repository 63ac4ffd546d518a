#!/usr/bin/env bash
# The DCB test NIC's ETS and DCBX as the inbox mlx5 driver has them
# (drivers/net/ethernet/mellanox/mlx5/core/en_dcbnl.c; docs/drivers.md),
# read with iproute2's `dcb -j`:
#  - at load (mlx5e_ets_init): every class vendor at 100%, priority 0 on
#    TC 1 and priority 1 on TC 0;
#  - strict and vendor classes read back at 100% (mlx5e_build_tc_tx_bw,
#    mlx5e_dcbnl_ieee_getets), ETS classes at what was set;
#  - an ETS class set to 0% shares the bandwidth left and reads back as 0%
#    when the others are non-zero; a bandwidth sum other than 100 is refused
#    (mlx5e_dbcnl_validate_ets) and changes nothing;
#  - kernels with the 2026 fix "Report 0 for non ETS TSA" (the test NIC's
#    ets_zero_non_ets) read strict classes back at 0% instead;
#  - willing is never reported;
#  - DCBX (mlx5e_dcbnl_setdcbx): LLD_MANAGED refused; `dcb dcbx set ... ieee`
#    without host refused; firmware mode clears the host bit; host mode
#    sets it again.
source "$(dirname "$0")/lib.sh"
require_lab
C=/sys/class/net/eth0/dcbtest
N=node2  # node2's agent manages nothing; node1's belongs to the reconcile tests
lsh $N "echo 1 > $C/reset"
ets() { lx $N dcb -j ets show dev eth0; }

j=$(ets)
expect_eq "prio_tc at load" "[1, 0, 2, 3, 4, 5, 6, 7]" "$(json_get "$j" 'j["prio_tc"]')"
expect_eq "tc_bw at load" "[100, 100, 100, 100, 100, 100, 100, 100]" "$(json_get "$j" 'j["tc_bw"]')"
expect_eq "tc_tsa at load" "['vendor', 'vendor', 'vendor', 'vendor', 'vendor', 'vendor', 'vendor', 'vendor']" "$(json_get "$j" 'j["tc_tsa"]')"
expect_eq "willing at load" False "$(json_get "$j" 'j.get("willing", False)')"

lsh $N "dcb ets set dev eth0 willing on tc-tsa all:strict 0:ets 1:ets tc-bw all:0 0:50 1:50 prio-tc all:0 3:1"
j=$(ets)
expect_eq "tc_bw of 50/50 with strict classes" "[50, 50, 100, 100, 100, 100, 100, 100]" "$(json_get "$j" 'j["tc_bw"]')"
expect_eq "tc_tsa of 50/50 with strict classes" "['ets', 'ets', 'strict', 'strict', 'strict', 'strict', 'strict', 'strict']" "$(json_get "$j" 'j["tc_tsa"]')"
expect_eq "willing (mlx5 never reports it)" False "$(json_get "$j" 'j.get("willing", False)')"

lsh $N "dcb ets set dev eth0 tc-tsa all:strict 0:ets 1:ets 2:ets tc-bw all:0 0:0 1:60 2:40 prio-tc all:0"
j=$(ets)
expect_eq "tc_bw with a 0% ETS class" "[0, 60, 40, 100, 100, 100, 100, 100]" "$(json_get "$j" 'j["tc_bw"]')"
expect_eq "tc_tsa with a 0% ETS class" "['ets', 'ets', 'ets', 'strict', 'strict', 'strict', 'strict', 'strict']" "$(json_get "$j" 'j["tc_tsa"]')"

# With the 2026 fix (Debian's 6.1.192 has it) strict classes read back at 0%.
lsh $N "echo 1 > $C/ets_zero_non_ets; dcb ets set dev eth0 tc-tsa all:strict 0:ets 1:ets tc-bw all:0 0:50 1:50 prio-tc all:0 3:1"
expect_eq "tc_bw of 50/50 with strict classes, after the fix" "[50, 50, 0, 0, 0, 0, 0, 0]" "$(json_get "$(ets)" 'j["tc_bw"]')"
lsh $N "echo 0 > $C/ets_zero_non_ets"

before=$(ets)
lsh $N "dcb ets set dev eth0 tc-tsa all:strict 0:ets 1:ets tc-bw all:0 0:70 1:70 prio-tc all:0 || true"
expect_eq "ETS after a set whose ETS bandwidth sums to 140" "$before" "$(ets)"

d() { lx $N dcb -j dcbx show dev eth0; }
flags() { json_get "$1" '" ".join(k for k in ("host", "lld_managed", "cee", "ieee", "static") if j.get(k))'; }
expect_eq "DCBX at load (host mode)" "host cee ieee" "$(flags "$(d)")"
lsh $N "dcb dcbx set dev eth0 lld_managed ieee || true"
expect_eq "DCBX after an LLD_MANAGED set (refused)" "host cee ieee" "$(flags "$(d)")"
lsh $N "dcb dcbx set dev eth0 ieee || true"
expect_eq "DCBX after ieee without host (refused)" "host cee ieee" "$(flags "$(d)")"
lsh $N "echo firmware > $C/dcbx_fw"
expect_eq "DCBX in firmware mode" "cee ieee" "$(flags "$(d)")"
lsh $N "dcb dcbx set dev eth0 host ieee"
expect_eq "DCBX after host ieee" "host ieee" "$(flags "$(d)")"
lsh $N "echo 1 > $C/reset"
pass "load state, strict/vendor at 100%, 0% ETS class, refused sum, willing, DCBX modes as mlx5"
