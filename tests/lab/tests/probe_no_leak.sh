#!/usr/bin/env bash
# 40 probes (latency, bandwidth, and failing ones) leave the verbs resources
# on both nodes where they started: QPs, CQs, MRs (and PDs) on rxe0, counted
# by the kernel (`rdma -j res show`), are released on every path. Every
# probe to node2 must succeed; every probe to a port where nothing listens
# must fail. Scheduled probes may be running at any moment, so the counts
# are compared when both nodes are idle.
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
RES=(qp cq mr pd)

# Scheduled probes only ever add resources for a while: the idle count of a
# node is, per resource, the smallest seen over a few readings.
min_counts() { # prints "node1.qp=N node1.cq=N ... node2.pd=N"
  local n i c k v kv
  declare -A m=()
  for i in 1 2 3 4 5; do
    for n in node1 node2; do
      c=$(res_counts "$n") || fail "$n: rdma res show failed"
      for kv in $c; do
        k=${kv%%=*} v=${kv#*=}
        if [[ -z ${m[$n.$k]:-} ]] || ((v < m[$n.$k])); then m[$n.$k]=$v; fi
      done
    done
    sleep 0.5
  done
  for n in node1 node2; do
    for k in "${RES[@]}"; do printf '%s.%s=%s ' "$n" "$k" "${m[$n.$k]}"; done
  done | sed 's/ $//'
  echo
}
base=$(min_counts)
log "before: $base"
field() { tr ' ' '\n' <<<"$2" | sed -n "s/^$1\.$3=//p"; } # field NODE COUNTS RES

# The counts do see probe resources (else the comparison below proves nothing).
pctl node1 -o json probe node2 --kind bandwidth --duration 3s >/dev/null &
bw=$!
declare -A peak=()
for _ in $(seq 8); do
  c=$(res_counts node1) || fail "node1: rdma res show failed"
  for kv in $c; do
    k=${kv%%=*} v=${kv#*=}
    ((v > ${peak[$k]:-0})) && peak[$k]=$v
  done
  sleep 0.2
done
wait "$bw" || fail "bandwidth probe failed"
for k in qp cq mr; do
  b=$(field node1 "$base" "$k")
  ((peak[$k] > b)) || fail "no probe $k seen on node1 during a probe (max ${peak[$k]}, idle $b)"
done
log "node1 during a bandwidth probe: qp=${peak[qp]} cq=${peak[cq]} mr=${peak[mr]} pd=${peak[pd]:-?}"

dead="$("$LAB" addr node2):1"  # nothing listens there: fails after the local endpoint exists
fails=0
reasons=()
for i in $(seq 40); do
  if ((i % 10 == 0)); then
    pctl node1 -o json probe "$dead" --iterations 5 >/dev/null && fail "probe to $dead succeeded?"
    continue
  elif ((i % 10 == 5)); then
    what="bandwidth 100ms"
    out=$(pctl node1 -o json probe node2 --kind bandwidth --duration 100ms 2>&1) && continue
  else
    what="latency 5"
    out=$(pctl node1 -o json probe node2 --iterations 5 2>&1) && continue
  fi
  ((fails += 1))
  why=$("$PY" -c 'import json,sys
try:
    j = json.loads(sys.argv[1]); print(j.get("failureReason", "?") + ": " + j.get("failureDetail", ""))
except ValueError:
    print(sys.argv[1].strip().splitlines()[-1] if sys.argv[1].strip() else "no output")' "$out")
  reasons+=("probe $i ($what): $why")
done
if ((fails > 0)); then
  log "$fails of 36 probes to node2 failed:"
  printf '  %s\n' "${reasons[@]}"
fi
((fails == 0)) || fail "$fails of 36 probes to node2 failed (first: ${reasons[0]})"

# A leaked responder endpoint would be released by its lease only after
# 35-150 s; the comparison is done well before that.
after=""
for _ in $(seq 10); do
  after=$(min_counts)
  [[ $after == "$base" ]] && break
done
expect_eq "rxe0 QPs, CQs, MRs, PDs after 40 probes" "$base" "$after"
pass "rxe0 resources before and after 40 probes: $base; 36 probes to node2 all succeeded, 4 to a dead port all failed"
