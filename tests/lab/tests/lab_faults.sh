#!/usr/bin/env bash
# The fault helpers do what they say: netem delay and loss on a node's link,
# cut (carrier down + detached) and silent cut, restore, kill a process in a
# node, rxe-remove / rxe-add. Leaves the lab as it found it.
source "$(dirname "$0")/lib.sh"
require_lab
ip2=$("$LAB" addr node2)

cleanup() {
  "$LAB" netem node2 clear >/dev/null 2>&1 || true
  "$LAB" restore node2 >/dev/null 2>&1 || true
  "$LAB" exec node2 -- sh -c 'rdma link show rxe0/1 >/dev/null 2>&1 || rdma link add rxe0 type rxe netdev eth0' >/dev/null 2>&1 || true
}
trap cleanup EXIT

rtt() { # min RTT in ms from node1 to node2, or "down"
  local out
  out=$(lx node1 ping -n -q -c "${1:-3}" -i 0.3 -W 2 "$ip2" 2>&1) || { echo down; return; }
  awk -F'= ' '/^rtt/ {split($2, a, "/"); print int(a[1])}' <<<"$out"
}

step() { log "$(date +%T.%N | cut -c1-12) $*"; }  # where a hang was, if one comes
step "netem"
base=$(rtt)
[[ $base != down ]] || fail "node2 unreachable before any fault"
"$LAB" netem node2 delay 200ms
d=$(rtt)
[[ $d != down ]] && ((d >= 380)) || fail "netem delay 200ms (both directions): want RTT >= 380 ms, got $d (base $base)"
"$LAB" netem node2 --dir out delay 200ms
o=$(rtt)
[[ $o != down ]] && ((o >= 190 && o < 380)) || fail "netem --dir out delay 200ms: want 190 <= RTT < 380 ms, got $o"
"$LAB" netem node2 loss 100%
expect_eq "RTT with 100% loss" down "$(rtt 2)"
"$LAB" netem node2 clear
c=$(rtt)
[[ $c != down ]] && ((c < 190)) || fail "after netem clear: RTT $c"
lx node2 tc qdisc show dev eth0 | grep -q netem && fail "netem qdisc left after clear"

step "cut / restore"
"$LAB" cut node2
expect_eq "RTT while cut" down "$(rtt 2)"
expect_eq "node2 eth0 carrier while cut" 0 "$(lx node2 cat /sys/class/net/eth0/carrier)"
"$LAB" restore node2
sleep 1
expect_eq "node2 eth0 carrier after restore" 1 "$(lx node2 cat /sys/class/net/eth0/carrier)"
[[ $(rtt) != down ]] || fail "node2 unreachable after restore"
"$LAB" cut node2 --silent
expect_eq "RTT while silently cut" down "$(rtt 2)"
expect_eq "node2 eth0 carrier while silently cut" 1 "$(lx node2 cat /sys/class/net/eth0/carrier)"
"$LAB" restore node2
[[ $(rtt) != down ]] || fail "node2 unreachable after restore (silent cut)"

step "kill"
# a process with a name of its own (PID 1 of a guest runs a plain `sleep`)
lsh node1 "cp /usr/bin/sleep /tmp/lab-victim && setsid -f /tmp/lab-victim 1000 </dev/null >/dev/null 2>&1"
lx node1 pgrep -x lab-victim >/dev/null || fail "test process did not start"
"$LAB" kill node1 lab-victim || fail "lab kill node1 lab-victim failed"
sleep 0.5
if lx node1 pgrep -x lab-victim >/dev/null; then fail "lab-victim still running after lab kill"; fi
rc=0; "$LAB" kill node1 no-such-proc || rc=$?
expect_eq "lab kill of a process that is not there" 1 "$rc"

step "rxe-remove"
"$LAB" rxe-remove node2
if lx node2 rdma link show rxe0/1 >/dev/null 2>&1; then fail "rxe0 still there after rxe-remove"; fi
step "rxe-add"
"$LAB" rxe-add node2
lx node2 rdma link show rxe0/1 | grep -q "state ACTIVE" || fail "rxe0 not ACTIVE after rxe-add"
roce_v2_ipv4_gid_index node2 >/dev/null || fail "no RoCE v2 IPv4 GID after rxe-add"
pass "RTT ${base} ms; +200 ms each way: ${d} ms; one way: ${o} ms"
