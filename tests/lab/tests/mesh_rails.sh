#!/usr/bin/env bash
# The fleet mesh on hosts with two RoCE ports (two rails): one UD port per
# RoCE port. Each of the lab's three nodes gets a second RoCE
# port: a macvlan on eth0 with an address of its own (arp_ignore=1 and
# arp_announce=2, so each address answers only on its own interface) and
# rxe1 over it. The agents, restarted with --mesh-inventory, open a UD port
# on rxe0 and on rxe1, answer on both, and probe a peer's rail i from their
# own rail i (the rail rotating with the flow label).
#  - node1's log names a responder on rxe0/1 and on rxe1/1, each a UD QP
#    (`rdma res`).
#  - Both rails carry mesh traffic: node2's rxe1 receives RoCE packets
#    (hw_counters rcvd_pkts) while the agents probe, and nothing is lost.
#  - node2's second rail drops everything it sends (netem in node2 on its
#    macvlan, which is only rxe1's traffic): node1's and node3's probes of
#    node2 are lost at about half (the half on rail 2), node1 <-> node3 stay
#    whole, and `rocectl mesh --targets` names rnic node2 (once the agents
#    are older than their 20 s window).
# Everything is undone at the end: rxe1 and the macvlans removed, the
# agents restarted without the mesh.
source "$(dirname "$0")/probe_lib.sh"
source "$(dirname "$0")/mesh_lib.sh"
NS=$PROBE_NS
# The agents are older than their window by the time the fault is judged.
# shellcheck disable=SC2034  # read by mesh_lib.sh
MESH_WINDOW=20
tmp=$(mktemp -d "/tmp/$TEST_NAME.XXXXXX")
rail_ip() { echo "192.168.77.$((30 + ${1#node}))"; }
# The agents go back to no mesh first (no UD port left on rxe1), then the
# second port goes; each step on its own (lsh runs sh -e).
cleanup() {
  mesh_agents_off
  for n in node1 node2 node3; do
    lsh "$n" "rdma link delete rxe1 || true; ip link del rail2 || true; sysctl -qw net.ipv4.conf.all.arp_ignore=0 net.ipv4.conf.all.arp_announce=0" >/dev/null 2>&1 || true
    lsh "$n" "rdma link show rxe1/1" >/dev/null 2>&1 && log "$n: rxe1 could not be removed"
  done
  rm -rf "$tmp"
}
trap cleanup EXIT

for n in node1 node2 node3; do
  lsh "$n" "modprobe macvlan && sysctl -qw net.ipv4.conf.all.arp_ignore=1 net.ipv4.conf.all.arp_announce=2 &&
    ip link add rail2 link eth0 type macvlan mode bridge && ip addr add $(rail_ip "$n")/24 dev rail2 &&
    ip link set rail2 up && rdma link add rxe1 type rxe netdev rail2" >/dev/null ||
    skip "$n: cannot add a second RoCE port (macvlan + rxe1) in this guest"
done

inventory=$tmp/inventory.txt
mesh_agents_on "$inventory"

# Both ports opened, each a UD QP of its device.
for dev in rxe0 rxe1; do
  qpn=""
  for _ in $(seq 30); do
    qpn=$(grep -o "responder on $dev/1 ([a-z0-9]*), UD QPN [0-9]*" "$(agent_log node1)" | tail -n 1 | awk '{print $NF}') || true
    [[ -n $qpn ]] && break
    sleep 1
  done
  [[ -n $qpn ]] || fail "node1's log names no mesh responder on $dev: $(grep 'mesh:' "$(agent_log node1)" | tail -n 5)"
  lsh node1 "rdma res show qp link $dev/1 lqpn $qpn" | grep -q "type UD" || fail "node1's QPN $qpn is not a UD QP on $dev"
  log "node1: UD responder on $dev/1, QPN $qpn"
done

rx1() { lsh node2 "cat /sys/class/infiniband/rxe1/ports/1/hw_counters/rcvd_pkts"; }

# Healthy, on both rails: wait for the peers to be described (probes flow).
for _ in $(seq 60); do
  read -r s _ <<<"$(mesh_counts node1 node2)"
  ((s > 40)) && break
  sleep 1
done
((s > 40)) || fail "node1 sent no mesh probes to node2 within 60 s (log: $(agent_log node1))"
read -r s0 l0 <<<"$(mesh_counts node1 node2)"
r0=$(rx1)
# A window of 60 probes (about 6 s at 10 a second).
read -r s1 l1 <<<"$(mesh_wait_sent node1 node2 $((s0 + 60)) 20)" || true
r1=$(rx1)
((s1 - s0 >= 60)) || fail "node1 -> node2: only $((s1 - s0)) probes settled in 20 s"
(((l1 - l0) * 50 <= s1 - s0)) || fail "node1 -> node2 healthy: $((l1 - l0)) of $((s1 - s0)) lost"
((r1 - r0 >= 40)) || fail "node2's rxe1 received $((r1 - r0)) packets over 60 probes: rail 2 carries no mesh traffic"
log "healthy: node1 -> node2 $((l1 - l0)) of $((s1 - s0)) lost; node2's rxe1 received $((r1 - r0)) packets meanwhile"

# node2's rail 2 drops all it sends.
lsh node2 "tc qdisc add dev rail2 root netem loss 100%" >/dev/null || skip "no netem qdisc in the guest"
read -r a0 b0 <<<"$(mesh_counts node1 node2)"
read -r c0 d0 <<<"$(mesh_counts node1 node3)"
t0=$(date +%s)
# A window of 150 probes of node2 (about 15 s).
read -r a1 b1 <<<"$(mesh_wait_sent node1 node2 $((a0 + 150)) 40)" || true
read -r c1 d1 <<<"$(mesh_counts node1 node3)"
sent=$((a1 - a0)) lost=$((b1 - b0))
((sent >= 150)) || fail "node1 -> node2 with rail 2 down: only $sent probes settled in 40 s"
((lost * 100 >= sent * 30 && lost * 100 <= sent * 70)) ||
  fail "node1 -> node2 with node2's rail 2 down: $lost of $sent lost (want about half)"
(((d1 - d0) * 50 <= c1 - c0)) || fail "node1 -> node3 lost $((d1 - d0)) of $((c1 - c0)) while only node2's rail 2 is down"
mesh_await_window
out=$(ip netns exec "$NS" "$ROCECTL_BIN" --timeout 30s -o json mesh --targets "$inventory") || true
first=$(json_get "$out" "j['suspects'][0]['kind'] + ' ' + j['suspects'][0]['component']" 2>/dev/null) ||
  fail "rocectl mesh named no suspect with node2's rail 2 down: $out"
expect_eq "first suspect" "rnic node2" "$first"
pass "UD ports on rxe0 and rxe1; healthy on both rails (rxe1 received $((r1 - r0)) packets over 60 probes); node2's rail 2 down -> node1 -> node2 $lost of $sent lost, node1 -> node3 $((d1 - d0)) of $((c1 - c0)), '$first' named after $(($(date +%s) - t0)) s"
