#!/usr/bin/env bash
# The fleet mesh on the lab's three nodes, one bridge (one ToR):
# every agent restarted with --mesh-inventory (the three nodes under
# tor-lab), so each probes the other two over UD queue pairs at the default
# 10 probes a second and answers their probes.
#  - Describe gives the UD QPN and Q_Key of node1's responder, and the QPN
#    is a UD QP on rxe0 (`rdma res`).
#  - Healthy: node1's /metrics counts probes to node2 and node3 and none
#    lost; every agent answered requests; ListMeshResults (rocectl mesh)
#    shows both peers reachable with round trips, and no suspect.
#  - 20% loss on node3's link (netem, both directions): within 30 s
#    node1's probes of node3 are lost at about 1 - 0.8^2 = 36% while node2's
#    stay whole, and `rocectl mesh --targets` over the three agents names
#    node3's RNIC (rnic node3) as the first suspect (asked once the agents
#    are older than their 20 s window).
#  - Cleared: node1's lost count for node3 stops rising.
#  - node2's agent restarted (a new QPN): node1's probes of it are answered
#    again within 45 s (described again after 10 lost in a row).
# The agents are restarted without the mesh at the end.
source "$(dirname "$0")/probe_lib.sh"
source "$(dirname "$0")/mesh_lib.sh"
NS=$PROBE_NS
# The agents are older than their window by the time the fault is judged.
# shellcheck disable=SC2034  # read by mesh_lib.sh
MESH_WINDOW=20
tmp=$(mktemp -d "/tmp/$TEST_NAME.XXXXXX")
cleanup() {
  "$LAB" netem node3 clear >/dev/null 2>&1 || true
  mesh_agents_off
  rm -rf "$tmp"
}
trap cleanup EXIT

inventory=$tmp/inventory.txt
mesh_agents_on "$inventory"

# Describe: node1's responder QPN is a UD QP of rxe0.
qpn=""
for _ in $(seq 60); do
  read -r sent _ <<<"$(mesh_counts node1 node3 2>/dev/null || echo "0 0")"
  ((sent > 20)) && break
  sleep 1
done
((sent > 20)) || fail "node1 sent no mesh probes to node3 within 60 s (log: $(agent_log node1))"
qpn=$(grep -o 'responder on rxe0/1 ([a-z0-9]*), UD QPN [0-9]*' "$(agent_log node1)" | tail -n 1 | awk '{print $NF}')
[[ -n $qpn ]] || fail "node1's log does not name its mesh responder's QPN"
lsh node1 "rdma res show qp link rxe0/1 lqpn $qpn" | grep -q "type UD" ||
  fail "node1's mesh QPN $qpn is not a UD QP on rxe0: $(lsh node1 'rdma res show qp link rxe0/1')"
log "node1's responder: UD QPN $qpn on rxe0/1"

# The UDP source ports node1's mesh datagrams leave from (tcpdump in node1,
# UD SEND_ONLY: BTH opcode 0x64) are the ones its log says rxe gives its QPs
# (0xC000 + hash_32(QPN, 14)): what a lost probe's source port reports.
ports=$(grep -o 'UDP source ports [0-9 ]*' "$(agent_log node1)" | tail -n 1 | sed 's/UDP source ports //')
[[ -n $ports ]] || fail "node1's log does not list its mesh source ports"
seen=$(lsh node1 "timeout 20 tcpdump -i eth0 -nn -c 40 'udp dst port 4791 and src host $("$LAB" addr node1) and udp[8] == 0x64' 2>/dev/null" |
  sed -n 's/.* IP [0-9.]*\.\([0-9]*\) > .*/\1/p' | sort -un | paste -sd' ')
[[ -n $seen ]] || fail "tcpdump saw no UD datagram from node1"
for p in $seen; do
  [[ " $ports " == *" $p "* ]] || fail "node1 sent a mesh datagram from UDP port $p, not one of its QPs' ($ports)"
done
log "node1's mesh datagrams left from UDP ports {$seen}, all among its QPs' {$ports}"

# Healthy: probes both ways, nothing lost, requests answered.
for peer in node2 node3; do
  read -r s l <<<"$(mesh_wait_sent node1 "$peer" 30 20)" || true
  ((s >= 30)) || fail "node1 -> $peer: only $s mesh probes settled in 20 s"
  # Under TCG a probe now and then outlives the 1 s timeout; more than 2% is a fault.
  ((l * 50 <= s)) || fail "node1 -> $peer: $l of $s mesh probes lost on a clean link"
  log "node1 -> $peer healthy: $l of $s lost"
done
for n in node2 node3; do
  a=$(mesh_scrape "$n" | awk '/^roced_mesh_requests_answered_total /{print int($2)}')
  ((a > 0)) || fail "$n answered no mesh requests"
done

# 20% loss on node3's link.
"$LAB" netem node3 loss 20% >/dev/null || fail "netem loss on node3 failed"
read -r s0 l0 <<<"$(mesh_counts node1 node3)"
read -r s2 l2 <<<"$(mesh_counts node1 node2)"
t0=$(date +%s)
# A window of 150 probes of node3 (about 15 s at 10 a second).
read -r s1 l1 <<<"$(mesh_wait_sent node1 node3 $((s0 + 150)) 40)" || true
read -r s3 l3 <<<"$(mesh_counts node1 node2)"
ds=$((s1 - s0)) dl=$((l1 - l0))
((ds >= 150)) || fail "node1 -> node3 under loss: only $ds probes settled in 40 s"
# 36% expected; 20-55% is about four standard deviations either way for 150 probes.
((dl * 100 >= ds * 20 && dl * 100 <= ds * 55)) ||
  fail "node1 -> node3 with 20% loss each way: $dl of $ds lost (want about 36%)"
(((l3 - l2) * 50 <= (s3 - s2))) || fail "node1 -> node2 lost $((l3 - l2)) of $((s3 - s2)) while only node3's link is lossy"
log "20% loss on node3: node1 -> node3 lost $dl of $ds; node1 -> node2 lost $((l3 - l2)) of $((s3 - s2))"

# The three agents' windows, localized.
mesh_await_window
out=$(ip netns exec "$NS" "$ROCECTL_BIN" --timeout 30s -o json mesh --targets "$inventory") || rc=$?
[[ ${rc:-0} -le 3 ]] || fail "rocectl mesh --targets failed ($rc): $out"
first=$(json_get "$out" "j['suspects'][0]['kind'] + ' ' + j['suspects'][0]['component']" 2>/dev/null) ||
  fail "rocectl mesh named no suspect under 20% loss on node3: $out"
expect_eq "first suspect" "rnic node3" "$first"
log "rocectl mesh named $first within $(($(date +%s) - t0)) s of the loss starting"

# Cleared: the lost count stops rising.
"$LAB" netem node3 clear >/dev/null || fail "netem clear failed"
# The probes in flight at the clear settle within their 1 s timeout: the
# window starts 20 probes later and lasts 80.
read -r s l <<<"$(mesh_counts node1 node3)"
read -r sc0 lc0 <<<"$(mesh_wait_sent node1 node3 $((s + 20)) 20)" || fail "node1 -> node3: no probes settled after the clear"
read -r sc1 lc1 <<<"$(mesh_wait_sent node1 node3 $((sc0 + 80)) 30)" || fail "node1 -> node3: only $((sc1 - sc0)) probes settled in 30 s after the clear"
(((lc1 - lc0) * 50 <= (sc1 - sc0))) || fail "after clearing: $((lc1 - lc0)) of $((sc1 - sc0)) still lost"
# node2's agent restarted: it answers on a new QPN; node1 describes it
# again once its probes are all lost, and they are answered within 30 s.
"$LAB" agent restart node2 >/dev/null || fail "node2's agent did not restart"
t1=$(date +%s)
back=0
for _ in $(seq 45); do
  sleep 1
  read -r a0 b0 <<<"$(mesh_counts node1 node2)"
  sleep 2
  read -r a1 b1 <<<"$(mesh_counts node1 node2)"
  if ((a1 - a0 >= 5 && b1 - b0 == 0)); then back=$(($(date +%s) - t1)); break; fi
done
((back > 0)) || fail "node1's probes of node2 were not answered again within 45 s of node2's restart"
log "node2 restarted: node1's probes answered again after ${back} s"
pass "UD QPN $qpn; healthy 0 loss; 20% on node3 -> $dl/$ds lost and '$first' named; cleared -> $((lc1 - lc0))/$((sc1 - sc0)); node2 restarted -> answered after ${back} s"
