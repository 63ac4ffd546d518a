#!/usr/bin/env bash
# MTU through the real kernel: `mtu: 4200` is set over rtnetlink (ip -j link
# shows it), and an `ip link set eth0 mtu 1500` behind the agent's back is
# undone through the RTNLGRP_LINK notification.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

m=$(cfg mtu <<'EOF2'
apiVersion: roced/v1
kind: NodeConfig
interfaces:
  - match: {netdev: eth0}
    mtu: 4200
EOF2
)
out=$(rctl apply -f "$m") || fail "apply of mtu 4200 failed: $out"
grep -q "disruptive" <<<"$out" || fail "the MTU step is not marked disruptive:
$out"
expect_eq "MTU (ip -j link)" 4200 "$(json_get "$(lx "$REC_NODE" ip -j link show eth0)" "j[0]['mtu']")"
expect_eq "status mtu" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$(rec_status)" eth0 mtu)"

res=$(lsh "$REC_NODE" "
  ip link set eth0 mtu 1500
  i=0
  while [ \$i -lt 100 ]; do
    [ \$(cat /sys/class/net/eth0/mtu) = 4200 ] && { ip -j link show eth0; exit 0; }
    sleep 0.1; i=\$((i + 1))
  done
  echo 'not corrected'") || fail "MTU drift poll failed: $res"
[[ $res != "not corrected" ]] || fail "ip link set eth0 mtu 1500 was not undone within ~10 s"
expect_eq "MTU after external change (ip -j link)" 4200 "$(json_get "$res" "j[0]['mtu']")"
pass "4200 set and kept"
