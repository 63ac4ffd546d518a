#!/usr/bin/env bash
# MLNX_OFED-style ECN sysfs on the DCB test NIC:
# /sys/class/net/eth0/ecn/roce_np|roce_rp/enable/<0..7> read 0 by default,
# take 0/1, refuse anything else; DCQCN parameters are readable and writable.
source "$(dirname "$0")/lib.sh"
require_lab
E=/sys/class/net/eth0/ecn

lsh node2 "echo 1 > /sys/class/net/eth0/dcbtest/reset"
got=$(lsh node2 "cd $E; for s in roce_np roce_rp; do for p in 0 1 2 3 4 5 6 7; do printf %s \$(cat \$s/enable/\$p); done; echo; done" | paste -sd' ')
expect_eq "defaults (np rp)" "00000000 00000000" "$got"
lsh node2 "echo 1 > $E/roce_np/enable/3; echo 1 > $E/roce_rp/enable/3; echo 1 > $E/roce_rp/enable/5"
got=$(lsh node2 "cd $E; for s in roce_np roce_rp; do for p in 0 1 2 3 4 5 6 7; do printf %s \$(cat \$s/enable/\$p); done; echo; done" | paste -sd' ')
expect_eq "after enabling np 3, rp 3 and 5" "00010000 00010100" "$got"
if lx node2 sh -c "echo 2 > $E/roce_np/enable/1" 2>/dev/null; then fail "enable accepted 2"; fi
if lx node2 sh -c "echo x > $E/roce_rp/enable/1" 2>/dev/null; then fail "enable accepted x"; fi
lsh node2 "echo 0 > $E/roce_rp/enable/5"
expect_eq "rp/enable/5 after disabling" 0 "$(lx node2 cat $E/roce_rp/enable/5)"
expect_eq "cnp_dscp default" 48 "$(lx node2 cat $E/roce_np/cnp_dscp)"
expect_eq "cnp_802p_prio default" 6 "$(lx node2 cat $E/roce_np/cnp_802p_prio)"
lsh node2 "echo 26 > $E/roce_np/cnp_dscp"
expect_eq "cnp_dscp after write" 26 "$(lx node2 cat $E/roce_np/cnp_dscp)"
if lx node2 sh -c "echo 64 > $E/roce_np/cnp_dscp" 2>/dev/null; then fail "cnp_dscp accepted 64"; fi
for f in rpg_min_rate rpg_max_rate rpg_ai_rate rpg_hai_rate rpg_time_reset dce_tcp_g initial_alpha_value; do
  lx node2 test -r "$E/roce_rp/$f" || fail "roce_rp/$f missing"
done
# node1's files are its own
expect_eq "node1 np/enable/3" 0 "$(lx node1 cat $E/roce_np/enable/3)"
lsh node2 "echo 1 > /sys/class/net/eth0/dcbtest/reset"
expect_eq "np/enable/3 after reset" 0 "$(lx node2 cat $E/roce_np/enable/3)"
pass
