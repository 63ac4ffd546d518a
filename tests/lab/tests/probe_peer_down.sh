#!/usr/bin/env bash
# A killed peer agent fails the probe with peer_unavailable well under the
# open timeout (5 s) instead of hanging; once the agent is back, probing it
# works again.
#
# How the time is measured: rocectl runs on the host, in the lab namespace
# (no `lab exec` in the path), so the wall time of the call is the probe plus
# rocectl's own start-up and one gRPC round trip to node1. That raw figure
# must be under 5 s, with nothing subtracted. For the record the test also
# prints the baseline (the same rocectl call path with `status`, best of 3),
# the raw time less that baseline, and the agent's own `elapsed` for the
# probe (guest clock), which must be under 5 s as well.
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
trap '"$LAB" agent status node2 >/dev/null 2>&1 || "$LAB" agent start node2 >/dev/null 2>&1 || true' EXIT

now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN{printf "%.3f", b-a}'; }
baseline=""
for _ in 1 2 3; do
  s=$(now)
  pctl node1 -o json status >/dev/null || fail "rocectl status against node1 failed"
  b=$(secs "$s" "$(now)")
  [[ -z $baseline ]] || awk -v b="$b" -v m="$baseline" 'BEGIN{exit !(b < m)}' && baseline=$b
done

"$LAB" kill node2 roced >/dev/null || fail "could not kill roced on node2"
start=$(now)
rc=0
out=$(pctl node1 -o json probe node2 --iterations 10) || rc=$?
took=$(secs "$start" "$(now)")
expect_eq "rocectl exit status" 1 "$rc"
expect_eq "failure_reason" peer_unavailable "$(json_get "$out" "j['failureReason']")"
agent_s=$(json_get "$out" "float(j.get('elapsed', '0s').rstrip('s'))")
net=$(awk -v t="$took" -v b="$baseline" 'BEGIN{printf "%.3f", t-b}')
log "node2's agent killed: peer_unavailable after ${took} s wall (rocectl call baseline ${baseline} s, so ~${net} s net; agent's elapsed ${agent_s} s) ($(json_get "$out" "j['failureDetail']"))"
awk -v t="$took" 'BEGIN{exit !(t < 5)}' || fail "took ${took} s to fail (bound: the 5 s open timeout)"
awk -v t="$agent_s" 'BEGIN{exit !(t < 5)}' || fail "the agent's elapsed for the failed probe is ${agent_s} s (bound: the 5 s open timeout)"

m=$(metrics node1) || fail "node1: GET /metrics failed"
grep -q '^roced_probe_failures_total{peer="node2",reason="peer_unavailable"} [1-9]' <<<"$m" ||
  fail "node1 /metrics does not count the failure"

"$LAB" agent start node2 >/dev/null || fail "roced does not start again on node2"
probe_prepare node2
ok=0
for _ in 1 2 3 4 5; do
  out=$(pctl node1 -o json probe node2 --iterations 10) && { ok=1; break; }
  sleep 2
done
((ok)) || { echo "$out"; fail "probing node2 did not resume after its agent came back"; }
pass "peer_unavailable in ${took} s wall (< 5 s; baseline ${baseline} s, agent elapsed ${agent_s} s); probing resumed after restart"
