#!/usr/bin/env bash
# 2% loss on node2's link (netem, both directions) shows up in a latency
# probe's result: retransmission counters move on one end or the other
# (rxe: completer_retry_err, duplicate_request, rcvd_seq_err, ...), and the
# result still arrives (a lost packet costs a retransmit timeout, not the run).
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
trap '"$LAB" netem node2 clear >/dev/null 2>&1 || true' EXIT

clean=$(pctl node1 -o json probe node2 --iterations 300) || fail "probe without loss failed"
"$LAB" netem node2 loss 2% >/dev/null || fail "netem loss 2% on node2 failed"
lossy=$(pctl node1 -o json probe node2 --iterations 300) || { echo "$lossy"; fail "probe with 2% loss failed"; }
"$LAB" netem node2 clear >/dev/null

# Retransmission-related counter deltas of a result, both ends summed.
retrans() {
  "$PY" - "$1" <<'PY'
import json, sys
r = json.loads(sys.argv[1])
names = ("retry", "duplicate", "seq_err", "out_of_seq", "retrans", "timeout", "nak")
print(sum(int(d["delta"]) for d in r.get("localCounterDeltas", []) + r.get("peerCounterDeltas", [])
          if any(k in d["name"] for k in names)))
PY
}
r_clean=$(retrans "$clean")
r_lossy=$(retrans "$lossy")
p99_clean=$(json_get "$clean" "round(j['latency']['p99Us'])")
p99_lossy=$(json_get "$lossy" "round(j['latency']['p99Us'])")
log "retransmission deltas: clean +$r_clean, 2% loss +$r_lossy; p99 ${p99_clean} us -> ${p99_lossy} us"
# Soft-RoCE under emulation retransmits now and then even on a clean link
# (a late ACK beats the 67 ms timeout); loss must add to that.
((r_lossy > r_clean)) ||
  fail "2% loss did not raise the retransmission counters: $(json_get "$lossy" "j.get('localCounterDeltas')") / $(json_get "$lossy" "j.get('peerCounterDeltas')")"
pass "retransmissions +$r_clean -> +$r_lossy with 2% loss; p99 ${p99_clean} -> ${p99_lossy} us"
