#!/usr/bin/env bash
# 200 probes (latency, bandwidth, and failing ones) leave the queue pair
# count on both nodes where it started: QPs, CQs and MRs are released on
# every path. Scheduled probes may be running at any moment, so the counts
# are compared when both nodes are idle.
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2

idle_counts() { # prints "n1 n2" once two readings a second apart agree
  local prev="" cur i
  for i in $(seq 60); do
    cur="$(qp_count node1) $(qp_count node2)"
    [[ $cur == "$prev" ]] && { echo "$cur"; return 0; }
    prev=$cur
    sleep 1
  done
  echo "$cur"
}
base=$(idle_counts)
log "QPs before (node1 node2): $base"

dead="$("$LAB" addr node2):1"  # nothing listens there: fails after the local endpoint exists
fails=0
for i in $(seq 200); do
  if ((i % 10 == 0)); then
    pctl node1 -o json probe "$dead" --iterations 5 >/dev/null && fail "probe to $dead succeeded?"
  elif ((i % 10 == 5)); then
    pctl node1 -o json probe node2 --kind bandwidth --duration 100ms >/dev/null || ((fails += 1))
  else
    pctl node1 -o json probe node2 --iterations 5 >/dev/null || ((fails += 1))
  fi
done
((fails == 0)) || fail "$fails of 180 probes to node2 failed"

# Leases would release a leaked responder endpoint after ~35 s: compare
# before that could hide a leak.
after=""
for _ in $(seq 20); do
  after=$(idle_counts)
  [[ $after == "$base" ]] && break
  sleep 1
done
expect_eq "QPs after 200 probes (node1 node2)" "$base" "$after"
pass "QP counts $base before and after 200 probes"
