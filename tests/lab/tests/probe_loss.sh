#!/usr/bin/env bash
# 10% loss on node2's link (netem, both directions) shows up in a latency
# probe's result: the result carries both ends' counter deltas (the peer's
# from its GetCounters, which must have answered), the retransmission
# counters move on each end (rxe: completer_retry_err, duplicate_request,
# rcvd_seq_err, ...), p99 rises, and the result still arrives (a lost packet costs a
# retransmit timeout, not the run).
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
trap '"$LAB" netem node2 clear >/dev/null 2>&1 || true' EXIT

clean=$(pctl node1 -o json probe node2 --iterations 300) || fail "probe without loss failed"
# 10%, not 2%: a clean probe on a loaded machine counted up to 105
# retransmissions (late ACKs past the 67 ms timeout, see below), more than
# 2% loss adds over 300 round trips (about 24 of their ~1,200 packets lost,
# 35 retries counted on an idle machine); 10% loses about 120, each costing
# a retransmission on top of the noise, so the lossy probe outgrows the
# clean one by design, not by chance.
"$LAB" netem node2 loss 10% >/dev/null || fail "netem loss 10% on node2 failed"
lossy=$(pctl node1 -o json probe node2 --iterations 300) || { echo "$lossy"; fail "probe with 10% loss failed"; }
"$LAB" netem node2 clear >/dev/null

# Both ends' deltas must be in each result: without the peer's, a sum of
# "both ends" is only the local end, and the peer's GetCounters failing
# would go unnoticed. peerCountersError (set when the peer's GetCounters
# failed) is the agent's reason; absent or empty means none.
for which in clean lossy; do
  r=${!which}
  err=$(json_get "$r" "j.get('peerCountersError', '')")
  [[ -z $err ]] || fail "$which probe: the peer's counters are missing: peerCountersError: $err"
  expect_eq "$which probe: local counter deltas present" True "$(json_get "$r" "len(j.get('localCounterDeltas', [])) > 0")"
  expect_eq "$which probe: peer counter deltas present" True "$(json_get "$r" "len(j.get('peerCounterDeltas', [])) > 0")"
done

# Retransmission-related counter deltas of a result: "local", "peer" or
# "both" ends summed, and the names that moved.
retrans() {
  "$PY" - "$1" "$2" <<'PY'
import json, sys
r, which = json.loads(sys.argv[1]), sys.argv[2]
names = ("retry", "duplicate", "seq_err", "out_of_seq", "retrans", "timeout", "nak")
ds = {"local": r.get("localCounterDeltas", []), "peer": r.get("peerCounterDeltas", [])}
ds["both"] = ds["local"] + ds["peer"]
if which == "names":
    print(" ".join(f"{e}:{d['name']}+{d['delta']}" for e in ("local", "peer") for d in ds[e]
                   if any(k in d["name"] for k in names) and int(d["delta"])) or "none")
else:
    print(sum(int(d["delta"]) for d in ds[which] if any(k in d["name"] for k in names)))
PY
}
r_clean=$(retrans "$clean" both)
r_lossy=$(retrans "$lossy" both)
p99_clean=$(json_get "$clean" "round(j['latency']['p99Us'])")
p99_lossy=$(json_get "$lossy" "round(j['latency']['p99Us'])")
log "retransmission deltas: clean +$r_clean (local $(retrans "$clean" local), peer $(retrans "$clean" peer)), 10% loss +$r_lossy (local $(retrans "$lossy" local), peer $(retrans "$lossy" peer)); p99 ${p99_clean} us -> ${p99_lossy} us"
log "retransmission counters that moved with 10% loss: $(retrans "$lossy" names)"
# Soft-RoCE under emulation retransmits now and then even on a clean link
# (a late ACK beats the 67 ms timeout); loss must add to that.
((r_lossy > r_clean)) ||
  fail "10% loss did not raise the retransmission counters: $(json_get "$lossy" "j.get('localCounterDeltas')") / $(json_get "$lossy" "j.get('peerCounterDeltas')")"
# Loss on node2's link drops both ends' packets (netem on both directions),
# so each end's own counters show it: the peer's deltas are real readings,
# not a list of zeros.
for end in local peer; do
  c=$(retrans "$clean" $end) l=$(retrans "$lossy" $end)
  ((l > c)) || fail "10% loss did not raise the $end end's retransmission counters (+$c clean, +$l with loss): $(json_get "$lossy" "j.get('${end}CounterDeltas')")"
done
# A lost packet costs a retransmit timeout; with 10% loss over 300
# iterations several do, so p99 (the 4th slowest) is one of them.
((p99_lossy > p99_clean)) || fail "10% loss did not raise p99: ${p99_clean} us clean, ${p99_lossy} us with loss"
pass "retransmissions +$r_clean -> +$r_lossy with 10% loss (peer deltas present on both runs); p99 ${p99_clean} -> ${p99_lossy} us"
