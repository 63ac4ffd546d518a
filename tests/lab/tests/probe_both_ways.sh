#!/usr/bin/env bash
# node1 and node2 probe each other at the same time: each agent is an
# initiator and a responder at once (perftest serves one test per port).
# The runs last seconds, so that their overlap shows on the two guests'
# clocks (set from the host's RTC at boot: up to a second apart).
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for kind in latency bandwidth; do
  extra=(--iterations 3000)
  [[ $kind == bandwidth ]] && extra=(--duration 4s)
  pctl node1 -o json probe node2 --kind "$kind" "${extra[@]}" >"$tmp/1to2" 2>&1 &
  a=$!
  pctl node2 -o json probe node1 --kind "$kind" "${extra[@]}" >"$tmp/2to1" 2>&1 &
  b=$!
  wait "$a" || { cat "$tmp/1to2"; fail "$kind: node1 -> node2 failed while node2 -> node1 ran"; }
  wait "$b" || { cat "$tmp/2to1"; fail "$kind: node2 -> node1 failed while node1 -> node2 ran"; }
  # The two runs overlapped in time.
  "$PY" - "$tmp/1to2" "$tmp/2to1" <<'PY' || fail "$kind: the two probes did not overlap"
import json, re, sys
from datetime import datetime
def span(path):
    r = json.load(open(path))
    assert r["success"], r
    # Nanosecond fractions: keep microseconds for fromisoformat.
    t = re.sub(r"(\.\d{6})\d*", r"\1", r["startedAt"]).replace("Z", "+00:00")
    start = datetime.fromisoformat(t).timestamp()
    return start, start + float(r["elapsed"].rstrip("s"))
(a0, a1), (b0, b1) = span(sys.argv[1]), span(sys.argv[2])
assert a0 < b1 and b0 < a1, ((a0, a1), (b0, b1))
PY
  log "$kind: both directions succeeded concurrently"
done
pass
