#!/usr/bin/env bash
# node1 and node2 probe each other at the same time: each agent is an
# initiator and a responder at once (perftest serves one test per port).
# The overlap is proven on the host's clock alone: each run lies inside its
# rocectl call and lasts its reported elapsed time, so two calls overlap for
# sure when neither run can have ended before the other began. (The guests'
# own clocks, set from the RTC at boot, can be a second apart: their
# startedAt stamps cannot prove it, and on a fast machine did not.)
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

for kind in latency bandwidth; do
  extra=(--iterations 3000)
  [[ $kind == bandwidth ]] && extra=(--duration 4s)
  # timed NAME CMD...: CMD's output in $tmp/NAME, the host's clock just
  # before and just after it in $tmp/NAME.t.
  timed() {
    local name=$1 t0 rc=0
    shift
    t0=$(date +%s.%N)
    "$@" >"$tmp/$name" 2>&1 || rc=$?
    echo "$t0 $(date +%s.%N)" >"$tmp/$name.t"
    return "$rc"
  }
  timed 1to2 pctl node1 -o json probe node2 --kind "$kind" "${extra[@]}" &
  a=$!
  timed 2to1 pctl node2 -o json probe node1 --kind "$kind" "${extra[@]}" &
  b=$!
  wait "$a" || fail "$kind: node1 -> node2 failed while node2 -> node1 ran: $(tr '\n' ' ' <"$tmp/1to2" | cut -c1-600)"
  wait "$b" || fail "$kind: node2 -> node1 failed while node1 -> node2 ran: $(tr '\n' ' ' <"$tmp/2to1" | cut -c1-600)"
  # The two runs overlapped in time.
  "$PY" - "$tmp/1to2" "$tmp/2to1" <<'PY' || fail "$kind: the two probes did not surely overlap (above)"
import json, sys
def run(path):
    r = json.load(open(path))
    assert r["success"], r
    call0, call1 = map(float, open(path + ".t").read().split())
    # The run: `elapsed` long, somewhere inside the call. Latest start,
    # earliest end, on the host's clock.
    e = float(r["elapsed"].rstrip("s"))
    return call1 - e, call0 + e
(a_start, a_end), (b_start, b_end) = run(sys.argv[1]), run(sys.argv[2])
print(f"  latest starts {a_start:.2f} / {b_start:.2f}, earliest ends {a_end:.2f} / {b_end:.2f} (host clock)")
assert a_start < b_end and b_start < a_end, "one run may have ended before the other began"
PY
  log "$kind: both directions succeeded concurrently"
done
pass
