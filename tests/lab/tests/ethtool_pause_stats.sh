#!/usr/bin/env bash
# mlx5-style ethtool statistics on the DCB test NIC, read with `ethtool -S`
# and `dcb -s` as independent clients: the counters are appended to
# virtio_net's own; a PFC storm makes a priority's pause counters climb and
# stopping it makes them stop; set_counter sets any counter; stats_mode pfc
# shows per-priority pause counters only for PFC-enabled priorities (as mlx5).
source "$(dirname "$0")/lib.sh"
require_lab
C=/sys/class/net/eth0/dcbtest

lsh node1 "echo 1 > $C/reset"
stats=$(lx node1 ethtool -S eth0)
for p in 0 1 2 3 4 5 6 7; do
  for s in rx_prio${p}_pause tx_prio${p}_pause rx_prio${p}_pause_duration tx_prio${p}_pause_duration; do
    grep -q "^ *$s: 0$" <<<"$stats" || fail "ethtool -S: $s missing or not 0"
  done
done
for s in rx_pause_ctrl_phy tx_pause_ctrl_phy rx_discards_phy rx_queue_0_packets; do
  grep -q "^ *$s: " <<<"$stats" || fail "ethtool -S: $s missing"
done

stat() { awk -v n="$2:" '$1 == n {print $2}' <<<"$1"; }

# Storm on priority 3, received pause frames, 1000/s.
lsh node1 "echo '3 1000 rx' > $C/storm"
expect_eq "storm state" "3 1000 rx" "$(lx node1 cat $C/storm)"
a=$(lx node1 ethtool -S eth0); sleep 2; b=$(lx node1 ethtool -S eth0)
a3=$(stat "$a" rx_prio3_pause) b3=$(stat "$b" rx_prio3_pause)
((b3 > a3 + 500)) || fail "rx_prio3_pause did not climb during the storm ($a3 -> $b3 in ~2 s at 1000/s)"
(($(stat "$b" rx_prio3_pause_duration) > 0)) || fail "rx_prio3_pause_duration did not climb"
expect_eq "tx_prio3_pause during an rx storm" 0 "$(stat "$b" tx_prio3_pause)"
expect_eq "rx_prio2_pause (other priority)" 0 "$(stat "$b" rx_prio2_pause)"
j=$(lx node1 dcb -s -j pfc show dev eth0)
(($(json_get "$j" 'j["indications"][3]') >= b3)) || fail "dcb pfc indications[3] below ethtool's rx_prio3_pause"
lsh node1 "echo off > $C/storm"
c=$(stat "$(lx node1 ethtool -S eth0)" rx_prio3_pause); sleep 1.5
d=$(stat "$(lx node1 ethtool -S eth0)" rx_prio3_pause)
expect_eq "rx_prio3_pause after the storm stopped" "$c" "$d"
expect_eq "storm state after stop" "off" "$(lx node1 cat $C/storm)"

# A transmit storm (the NIC pausing the switch) on priority 5.
lsh node1 "echo '5 500 tx' > $C/storm; sleep 1.5; echo off > $C/storm"
s=$(lx node1 ethtool -S eth0)
(($(stat "$s" tx_prio5_pause) > 0)) || fail "tx_prio5_pause did not climb in a tx storm"
expect_eq "rx_prio5_pause in a tx storm" 0 "$(stat "$s" rx_prio5_pause)"
j=$(lx node1 dcb -s -j pfc show dev eth0)
expect_eq "dcb pfc requests[5] = tx_prio5_pause" "$(stat "$s" tx_prio5_pause)" "$(json_get "$j" 'j["requests"][5]')"

# set_counter
lsh node1 "echo 'rx_discards_phy 42' > $C/set_counter; echo 'rx_discards_phy +8' > $C/set_counter"
expect_eq "rx_discards_phy" 50 "$(stat "$(lx node1 ethtool -S eth0)" rx_discards_phy)"
if lx node1 sh -c "echo 'no_such_counter 1' > $C/set_counter" 2>/dev/null; then fail "set_counter accepted an unknown name"; fi

# stats_mode pfc: per-priority pause counters only for PFC-enabled priorities
lsh node1 "dcb pfc set dev eth0 prio-pfc all:off 3:on; echo pfc > $C/stats_mode"
names=$(lx node1 ethtool -S eth0 | awk '/prio[0-9]_pause:/ {sub(":", "", $1); print $1}' | paste -sd' ')
expect_eq "pause counters in pfc mode" "rx_prio3_pause tx_prio3_pause" "$names"
lsh node1 "echo 1 > $C/reset"
pass "storm: rx_prio3_pause $a3 -> $b3 in ~2 s, then flat"
