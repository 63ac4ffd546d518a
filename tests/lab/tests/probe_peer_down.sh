#!/usr/bin/env bash
# A killed peer agent fails the probe with peer_unavailable within the
# open timeout (5 s) instead of hanging; once the agent is back, probing it
# works again.
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
trap '"$LAB" agent status node2 >/dev/null 2>&1 || "$LAB" agent start node2 >/dev/null 2>&1 || true' EXIT

"$LAB" kill node2 roced >/dev/null || fail "could not kill roced on node2"
start=$(date +%s.%N)
rc=0
out=$(pctl node1 -o json probe node2 --iterations 10) || rc=$?
took=$(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}')
expect_eq "rocectl exit status" 1 "$rc"
expect_eq "failure_reason" peer_unavailable "$(json_get "$out" "j['failureReason']")"
awk -v t="$took" 'BEGIN{exit !(t < 10)}' || fail "took ${took} s to fail (bound: 5 s open timeout + slack)"
log "node2's agent killed: peer_unavailable after ${took} s ($(json_get "$out" "j['failureDetail']"))"

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
pass "peer_unavailable in ${took} s; probing resumed after restart"
