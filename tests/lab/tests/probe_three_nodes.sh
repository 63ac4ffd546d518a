#!/usr/bin/env bash
# With three nodes: node1 probes node2 and node3 concurrently while node2 and
# node3 both probe node1, so node1 is initiator twice and responder twice at
# the same time. Skips on a lab of fewer nodes (the ctest suite boots three;
# LAB_TEST_NODES=2 makes it skip).
source "$(dirname "$0")/probe_lib.sh"
if ((NODES < 3)); then
  # Skipping is fine when whoever runs the tests asked for a smaller lab;
  # otherwise (and always in CI) a short lab is a failure.
  [[ -n ${LAB_TEST_NODES:-} ]] && ((LAB_TEST_NODES < 3)) &&
    skip_by_choice "LAB_TEST_NODES=$LAB_TEST_NODES: needs a lab with at least 3 nodes (this one has $NODES)"
  skip "needs a lab with at least 3 nodes (this one has $NODES)"
fi
probe_prepare node1 node2 node3
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

pids=()
for pair in node1:node2 node1:node3 node2:node1 node3:node1; do
  from=${pair%%:*} to=${pair##*:}
  pctl "$from" -o json probe "$to" --iterations 1500 >"$tmp/$from-$to" 2>&1 &
  pids+=("$!:$from->$to")
done
for p in "${pids[@]}"; do
  wait "${p%%:*}" || { cat "$tmp/$(sed 's/->/-/' <<<"${p#*:}")"; fail "${p#*:} failed"; }
done
"$PY" - "$tmp"/node1-node2 "$tmp"/node1-node3 "$tmp"/node2-node1 "$tmp"/node3-node1 <<'PY' || fail "the four probes did not all overlap"
import json, re, sys
from datetime import datetime
spans = []
for path in sys.argv[1:]:
    r = json.load(open(path))
    assert r["success"], r
    t = re.sub(r"(\.\d{6})\d*", r"\1", r["startedAt"]).replace("Z", "+00:00")
    start = datetime.fromisoformat(t).timestamp()
    spans.append((start, start + float(r["elapsed"].rstrip("s"))))
# Some moment lies inside all four runs.
assert max(s for s, _ in spans) < min(e for _, e in spans), spans
PY
summary=$(for f in node1-node2 node1-node3 node2-node1 node3-node1; do
  printf '%s p50 %s us; ' "$f" "$(json_get "$(cat "$tmp/$f")" "round(j['latency']['p50Us'])")"
done)
pass "$summary"
