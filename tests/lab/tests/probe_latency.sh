#!/usr/bin/env bash
# `rocectl --target <node1>:7471 -o json probe node2` runs an RDMA WRITE
# ping-pong over Soft-RoCE and returns p50/p99 (and the rest of
# ib_write_lat's figures); the table output uses perftest's columns; node1's
# /metrics carries the latency histogram for peer node2.
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2

out=$(pctl node1 -o json probe node2 --iterations 200) || { echo "$out"; fail "probe node2 failed"; }
expect_eq "success" True "$(json_get "$out" "j['success']")"
expect_eq "device" rxe0 "$(json_get "$out" "j['device']")"
expect_eq "samples" 200 "$(json_get "$out" "j['latency']['samples']")"
"$PY" - "$out" <<'PY' || fail "latency figures out of order: $out"
import json, sys
l = json.loads(sys.argv[1])["latency"]
assert 0 < l["minUs"] <= l["p50Us"] <= l["p90Us"] <= l["p99Us"] <= l["p999Us"] <= l["maxUs"], l
assert l["minUs"] <= l["meanUs"] <= l["maxUs"] and l["stdevUs"] >= 0, l
assert l["p99Us"] < 1e6, l  # Soft-RoCE under TCG: milliseconds, never a second
PY
p50=$(json_get "$out" "round(j['latency']['p50Us'], 1)")
p99=$(json_get "$out" "round(j['latency']['p99Us'], 1)")

table=$(pctl node1 probe node2 --iterations 20) || fail "table output: probe failed"
for col in '#bytes' '#iterations' 't_min\[usec\]' 't_typical\[usec\]' '99% pctl\[usec\]'; do
  grep -q -- "$col" <<<"$table" || { echo "$table"; fail "table output lacks $col"; }
done

m=$(metrics node1) || fail "node1: GET /metrics failed"
grep -q '^roced_probe_latency_seconds_count{device="rxe0",peer="node2"} [1-9]' <<<"$m" ||
  fail "node1 /metrics has no latency histogram for node2: $(grep roced_probe <<<"$m" | head -5)"
grep -q '^roced_probe_last_success_timestamp_seconds{kind="latency",peer="node2"}' <<<"$m" ||
  fail "node1 /metrics has no last-success timestamp for node2"
hist=$(pctl node1 -o json probes node2 --kind latency --limit 1) || fail "rocectl probes failed"
expect_eq "latest listed result succeeded" True "$(json_get "$hist" "j['results'][0]['success']")"
pass "node1 -> node2: p50 ${p50} us, p99 ${p99} us (2 B x 200)"
