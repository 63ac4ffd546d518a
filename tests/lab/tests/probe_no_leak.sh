#!/usr/bin/env bash
# 200 probes (latency, bandwidth, and failing ones) leave the queue pair
# count on both nodes where it started: QPs, CQs and MRs are released on
# every path. Scheduled probes may be running at any moment, so the counts
# are compared when both nodes are idle.
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2

# Scheduled probes only ever add QPs for a while: the idle count of a node
# is the smallest seen over a few readings.
min_counts() { # prints "n1 n2"
  local m1=999999 m2=999999 c i
  for i in 1 2 3 4 5; do
    c=$(qp_count node1); ((c < m1)) && m1=$c
    c=$(qp_count node2); ((c < m2)) && m2=$c
    sleep 0.5
  done
  echo "$m1 $m2"
}
base=$(min_counts)
log "QPs before (node1 node2): $base"

# The count does see probe QPs (else the comparison below proves nothing).
pctl node1 -o json probe node2 --kind bandwidth --duration 3s >/dev/null &
bw=$!
peak=0
for _ in $(seq 10); do
  c=$(qp_count node1)
  ((c > peak)) && peak=$c
  sleep 0.3
done
wait "$bw" || fail "bandwidth probe failed"
((peak > ${base%% *})) || fail "no probe QP seen on node1 during a probe (max $peak, idle ${base%% *})"

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
# A failed probe must release its resources like a successful one; a few
# failures are Soft-RoCE under emulation (retransmission storms can end a
# bandwidth run with a work-completion error), many are a bug.
if ((fails > 0)); then
  log "$fails of 180 probes to node2 failed:"
  pctl node1 probes node2 --limit 200 | grep FAILED | head -5 || true
fi
((fails <= 18)) || fail "$fails of 180 probes to node2 failed"

# A leaked responder endpoint would be released by its lease only after
# 35-150 s; the comparison is done well before that.
after=""
for _ in $(seq 10); do
  after=$(min_counts)
  [[ $after == "$base" ]] && break
done
expect_eq "QPs after 200 probes (node1 node2)" "$base" "$after"
pass "QP counts $base before and after 200 probes"
