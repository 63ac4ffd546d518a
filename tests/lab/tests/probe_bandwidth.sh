#!/usr/bin/env bash
# `rocectl ... probe node2 --kind bandwidth` streams RDMA WRITEs and returns
# Gb/s and the message rate; /metrics has the bandwidth gauge. A counted run
# (--iterations N, as ib_write_bw -n N) writes exactly N messages, also
# when N is not a multiple of the signalling interval, and with --busy-poll.
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2

out=$(pctl node1 -o json probe node2 --kind bandwidth --duration 2s) ||
  { echo "$out"; fail "bandwidth probe failed"; }
expect_eq "success" True "$(json_get "$out" "j['success']")"
expect_eq "size (default 64 KiB)" 65536 "$(json_get "$out" "j['size']")"
"$PY" - "$out" <<'PY' || fail "bandwidth figures implausible: $out"
import json, sys
b = json.loads(sys.argv[1])["bandwidth"]
assert 0 < b["gbps"] <= b["peakGbps"] < 100, b
assert int(b["messages"]) > 0 and int(b["bytes"]) == int(b["messages"]) * 65536, b
assert b["msgRateMpps"] > 0, b
PY
gbps=$(json_get "$out" "round(j['bandwidth']['gbps'], 4)")
for args in "--iterations 1000" "--iterations 333 --qps 2 --busy-poll"; do
  # shellcheck disable=SC2086
  counted=$(pctl node1 -o json probe node2 --kind bandwidth $args) ||
    { echo "$counted"; fail "counted bandwidth probe ($args) failed"; }
  want=${args#--iterations }
  want=${want%% *}
  expect_eq "messages of a counted run ($args)" "$want" "$(json_get "$counted" "j['bandwidth']['messages']")"
  expect_eq "bytes of a counted run ($args)" "$((want * 65536))" "$(json_get "$counted" "j['bandwidth']['bytes']")"
  expect_eq "iterations in the result ($args)" "$want" "$(json_get "$counted" "j['iterations']")"
done
expect_eq "busyPoll in the result" True "$(json_get "$counted" "j.get('busyPoll', False)")"
table=$(pctl node1 probe node2 --kind bandwidth --duration 1s) || fail "table output: probe failed"
grep -q 'BW average\[Gb/sec\]' <<<"$table" || { echo "$table"; fail "table output lacks BW average"; }
m=$(metrics node1) || fail "node1: GET /metrics failed"
grep -q '^roced_probe_bandwidth_bits_per_second{device="rxe0",peer="node2"} ' <<<"$m" ||
  fail "node1 /metrics has no bandwidth gauge for node2"
pass "node1 -> node2: ${gbps} Gb/s (64 KiB, 2 s)"
