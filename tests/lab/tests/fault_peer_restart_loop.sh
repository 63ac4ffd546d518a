#!/usr/bin/env bash
# Fault matrix: a peer agent (node2) killed and restarted, again
# and again, while it takes part in probes.
#  A. node2 as the responder, three rounds of: a 3 s bandwidth probe
#     node1 -> node2 is running (its 128 KiB MR seen on node2) when node2's
#     roced is killed (SIGKILL): the probe fails with a reason, in bounded
#     time; a probe while node2 is down fails with peer_unavailable under
#     the 5 s open timeout; node2's agent started again (as the lab does),
#     probing it works.
#  B. node2 as the initiator: a long latency run node2 -> node1 is running
#     (node1's responder QP seen) when node2's roced is killed: node1 must
#     release the endpoint it holds for the vanished initiator (its QP, CQ,
#     MR, PD, verbs context) soon, not keep it for the whole lease (150 s
#     for any latency run): a crash-looping peer would otherwise pile them
#     up, hold `rdma link delete` up and hit the per-caller endpoint limit.
# Afterwards node1's agent is the same process, serving, with the same
# accepted generation (node2's restarted agent too), no growth of
# its open descriptors (/proc/PID/fd) or threads (/proc/PID/task) that
# scales with the rounds (gRPC's pools vary by a thread or two), and
# rxe0's QPs, CQs, MRs and PDs (`rdma res`) on both nodes are back where
# they were. node2's scheduled probes are paused for the test (its lab config
# with hourly intervals), so that no kill lands in one by chance; node1's
# scheduled latency probes (every 30 s, 4 KiB MRs) go on.
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
tmp=$(mktemp -d "/tmp/$TEST_NAME.XXXXXX")
res1=""
cleanup() {
  "$LAB" agent status node2 >/dev/null 2>&1 || "$LAB" agent start node2 >/dev/null 2>&1 || true
  # An endpoint node1 still holds for a killed node2 would stay for its
  # lease (150 s) into the next test: a restart of node1's agent frees it.
  if [[ -n $res1 && $(res_counts node1 2>/dev/null) != "$res1" ]]; then "$LAB" agent restart node1 >/dev/null 2>&1 || true; fi
  pctl node2 apply -f "$("$LAB" logdir node2)/roced.yaml" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap cleanup EXIT
sed 's/interval: [0-9a-z]*/interval: 1h/' "$("$LAB" logdir node2)/roced.yaml" >"$tmp/node2-quiet.yaml"
pctl node2 apply -f "$tmp/node2-quiet.yaml" >/dev/null || fail "could not pause node2's scheduled probes"
ROUNDS=3
gen_of() { json_get "$(pctl "$1" -o json status)" "int(j['config']['generation'])"; }
gen1=$(gen_of node1)
gen2=$(gen_of node2)

# counts PID: "fds=N threads=N" of node1's agent.
counts() { lsh node1 "set -- /proc/$1/fd/*; f=\$#; set -- /proc/$1/task/*; echo fds=\$f threads=\$#"; }
# fd_list PID: what each of node1's agent's descriptors is, one per line
# (sockets with their inode's TCP/Unix peer), to name what grew.
fd_list() { lsh node1 "for f in /proc/$1/fd/*; do printf '%s %s\\n' \"\${f##*/}\" \"\$(readlink \"\$f\")\"; done; echo '-- tcp'; cat /proc/$1/net/tcp /proc/$1/net/tcp6 2>/dev/null"; }
# probe_to FROM TO FILE ARGS...: rocectl probe; FILE gets "RC SECONDS" then the output.
probe_to() {
  local from=$1 to=$2 file=$3 t0 rc=0 out
  shift 3
  t0=$(date +%s.%N)
  out=$(pctl "$from" -o json probe "$to" "$@" 2>&1) || rc=$?
  printf '%s %s\n%s\n' "$rc" "$(elapsed "$t0")" "$out" >"$file"
}
# Warm up before the baseline: node1's channel to node2 and probe threads,
# and its counter files (opened at the first GetCounters or scrape, then
# kept: 16 for rxe0).
pctl node1 -o json probe node2 --iterations 10 >/dev/null || fail "probe before the loop failed"
pctl node1 -o json counters >/dev/null || fail "rocectl counters against node1 failed"
metrics node1 >/dev/null || fail "node1: GET /metrics failed"
# rxe0's counter files must be open before the baseline: after a test that
# removed and re-added rxe0 the agent opens them again within ~10 s.
# (The page is read whole before grep: `metrics | grep -q` under pipefail
# fails when grep quits at its match and curl, still writing, gets SIGPIPE:
# the loop would end at a match and the check after it fail.)
rxe0_counters_shown() { local m; m=$(metrics node1) && grep -q '^roced_rdma_hw_counters_total{device="rxe0"' <<<"$m"; }
wait_until 20 rxe0_counters_shown ||
  fail "node1: no rxe0 hw counters in /metrics 20 s after the warm-up"
res1=$(idle_res node1)
pid=$(agent_pid node1)
# Steady first (nothing else opening or closing).
before=$(counts "$pid")
for _ in 1 2 3 4 5; do
  sleep 2
  now=$(counts "$pid")
  [[ $now == "$before" ]] && break
  before=$now
done
res2=$(idle_res node2)
fds_before=$(fd_list "$pid")
log "baseline: node1 roced pid $pid $before; rxe0 node1 $res1, node2 $res2"

# A. node2 as the responder.
reasons=()
for round in $(seq "$ROUNDS"); do
  probe_to node1 node2 "$tmp/a" --kind bandwidth --duration 3s &
  prober=$!
  wait_mr node2 65536 "$prober" "round $round: the bandwidth probe"
  "$LAB" kill node2 roced >/dev/null || fail "round $round: could not kill node2's roced"
  # While the interrupted run fails: a probe of the dead peer, and the restart.
  probe_to node1 node2 "$tmp/b" --iterations 10
  read -r rc took <"$tmp/b"
  out=$(tail -n +2 "$tmp/b")
  ((rc == 1)) || fail "round $round: probe of a dead peer: rocectl exit $rc: $out"
  expect_eq "round $round: probe of a dead peer" peer_unavailable "$(json_get "$out" "j.get('failureReason', '')")"
  awk -v t="$took" 'BEGIN{exit !(t < 5)}' || fail "round $round: peer_unavailable took $took s (bound: the 5 s open timeout)"
  "$LAB" agent start node2 >/dev/null 2>&1 || fail "round $round: roced does not start again on node2"
  wait "$prober"
  read -r rc took <"$tmp/a"
  out=$(tail -n +2 "$tmp/a")
  ((rc == 1)) || fail "round $round: the probe whose responder was killed: rocectl exit $rc after $took s: $out"
  reason=$(json_get "$out" "j.get('failureReason', '')")
  [[ -n $reason && $reason != internal ]] || fail "round $round: killed responder: no clear reason: $out"
  awk -v t="$took" 'BEGIN{exit !(t < 20)}' || fail "round $round: killed responder: the probe took $took s to fail"
  log "round $round: responder killed mid-run: $reason after $took s ($(json_get "$out" "j.get('failureDetail', '')")); dead peer: peer_unavailable"
  reasons+=("$reason")
  ok=0
  for _ in 1 2 3 4 5; do
    out=$(pctl node1 -o json probe node2 --iterations 10) && { ok=1; break; }
    sleep 1
  done
  ((ok)) || fail "round $round: probing node2 did not resume after its restart: $out"
done

pctl node1 -o json status >/dev/null || fail "node1's agent stopped serving"
expect_eq "node1's roced pid (it must not have died)" "$pid" "$(agent_pid node1)"
expect_eq "node1's accepted generation" "$gen1" "$(gen_of node1)"
expect_eq "node2's accepted generation after $ROUNDS kill -9 and restarts (resumed from its state dir)" "$gen2" "$(gen_of node2)"
res_back node1 "$res1" 15 || fail "node1: rxe0 resources $(res_counts node1) after the rounds, before them $res1:
$(res_detail node1)"
res_back node2 "$res2" 15 || fail "node2: rxe0 resources $(res_counts node2) after the rounds, before them $res2:
$(res_detail node2)"
# gRPC's thread pools grow and shrink by a thread or two with the load
# (measured: 25-27 threads idle): what must not be there is growth that
# scales with the rounds, i.e. one or more per restart. Threads of finished
# probes and idle workers may take a moment to go.
deadline=$((SECONDS + 15))
while :; do
  after=$(counts "$pid")
  "$PY" -c '
import sys
b = dict(kv.split("=") for kv in sys.argv[1].split())
a = dict(kv.split("=") for kv in sys.argv[2].split())
sys.exit(0 if all(int(a[k]) - int(b[k]) < int(sys.argv[3]) for k in b) else 1)' "$before" "$after" "$ROUNDS" && break
  ((SECONDS < deadline)) || fail "node1's agent grew by $ROUNDS or more over $ROUNDS peer restarts: $before before, $after after; descriptors before:
$fds_before
after:
$(fd_list "$pid")"
  sleep 1
done
log "after $ROUNDS rounds: node1 $after (before $before); rxe0 node1 $res1, node2 $res2 again"

# B. node2 as the initiator, killed mid-run (size 64 KiB: not node1's own
# scheduled 2-byte probes).
probe_to node2 node1 "$tmp/c" --iterations 100000 --size 65536 &
prober=$!
wait_mr node1 65536 "$prober" "node2's latency run"
"$LAB" kill node2 roced >/dev/null || fail "could not kill node2's roced mid-run"
wait "$prober" || true
t0=$(date +%s.%N)
if ! res_back node1 "$res1" 20; then
  fail "node1 still holds the endpoint of node2's killed run $(elapsed "$t0") s after the kill (rxe0 $(res_counts node1), before $res1): released only when its lease ends:
$(res_detail node1)"
fi
released=$(elapsed "$t0")
"$LAB" agent start node2 >/dev/null 2>&1 || fail "roced does not start again on node2"
pass "$ROUNDS restarts of node2 as responder: ${reasons[*]}; node1 $before -> $after; rxe0 back to '$res1' / '$res2'; node2 killed as initiator: node1 released its endpoint in ${released} s"
