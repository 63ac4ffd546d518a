#!/usr/bin/env bash
# ib_write_bw between node1 (server) and node2 (client) over Soft-RoCE:
# succeeds on both sides and reports a positive bandwidth.
source "$(dirname "$0")/lib.sh"
require_lab

gid1=$(roce_v2_ipv4_gid_index node1) || fail "node1: no RoCE v2 IPv4 GID on rxe0"
gid2=$(roce_v2_ipv4_gid_index node2) || fail "node2: no RoCE v2 IPv4 GID on rxe0"
server_ip=$("$LAB" addr node1)
size=65536 iters=${BW_ITERS:-200}
srv_out=$(mktemp)
trap 'rm -f "$srv_out"' EXIT

"$LAB" exec -t 180 node1 -- ib_write_bw -d rxe0 -x "$gid1" -s $size -n "$iters" --report_gbits >"$srv_out" 2>&1 &
srv=$!
out=""
for attempt in 1 2 3 4 5 6 7 8 9 10; do
  sleep 1
  if out=$("$LAB" exec -t 180 node2 -- ib_write_bw -d rxe0 -x "$gid2" -s $size -n "$iters" --report_gbits "$server_ip" 2>&1); then
    break
  fi
  grep -q "Couldn't connect" <<<"$out" || { echo "$out"; fail "ib_write_bw client failed"; }
  out=""
done
[[ -n $out ]] || fail "client never connected to the server"
wait "$srv" || { cat "$srv_out"; fail "ib_write_bw server failed"; }
echo "$out" | tail -3

# " #bytes #iterations BW peak[Gb/sec] BW average[Gb/sec] MsgRate[Mpps]"
row=$(awk '$1 ~ /^[0-9]+$/ && NF == 5 {print; exit}' <<<"$out")
[[ -n $row ]] || fail "no result row in ib_write_bw output"
read -r bytes n peak avg rate <<<"$row"
expect_eq "message size" "$size" "$bytes"
expect_eq "iterations" "$iters" "$n"
"$PY" - "$peak" "$avg" "$rate" <<'PY' || fail "bandwidth figures out of range: $row"
import sys
peak, avg, rate = map(float, sys.argv[1:])
assert 0 < avg <= peak * 1.0001 and avg < 100, (peak, avg)   # Gb/s
assert rate > 0
PY
pass "BW average ${avg} Gb/s, peak ${peak} Gb/s (${bytes} B x ${n})"
