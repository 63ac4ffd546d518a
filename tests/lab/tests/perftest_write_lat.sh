#!/usr/bin/env bash
# ib_write_lat between node1 (server) and node2 (client) over Soft-RoCE:
# succeeds on both sides and reports sane latency figures.
source "$(dirname "$0")/lib.sh"
require_lab

gid1=$(roce_v2_ipv4_gid_index node1) || fail "node1: no RoCE v2 IPv4 GID on rxe0"
gid2=$(roce_v2_ipv4_gid_index node2) || fail "node2: no RoCE v2 IPv4 GID on rxe0"
server_ip=$("$LAB" addr node1)
iters=${LAT_ITERS:-1000}
srv_out=$(mktemp)
trap 'rm -f "$srv_out"' EXIT

"$LAB" exec -t 120 node1 -- ib_write_lat -d rxe0 -x "$gid1" -n "$iters" >"$srv_out" 2>&1 &
srv=$!
out=""
for attempt in 1 2 3 4 5 6 7 8 9 10; do  # the server needs a moment to listen
  sleep 1
  if out=$("$LAB" exec -t 120 node2 -- ib_write_lat -d rxe0 -x "$gid2" -n "$iters" "$server_ip" 2>&1); then
    break
  fi
  grep -q "Couldn't connect" <<<"$out" || { echo "$out"; fail "ib_write_lat client failed"; }
  out=""
done
[[ -n $out ]] || fail "client never connected to the server"
wait "$srv" || { cat "$srv_out"; fail "ib_write_lat server failed"; }
echo "$out" | tail -4

# " #bytes #iterations t_min t_max t_typical t_avg t_stdev 99% 99.9%"
row=$(awk '$1 ~ /^[0-9]+$/ && NF >= 9 {print; exit}' <<<"$out")
[[ -n $row ]] || fail "no result row in ib_write_lat output"
read -r bytes n tmin tmax ttyp tavg _ <<<"$row"
expect_eq "iterations" "$iters" "$n"
"$PY" - "$tmin" "$ttyp" "$tavg" "$tmax" <<'PY' || fail "latency figures out of range: $row"
import sys
tmin, ttyp, tavg, tmax = map(float, sys.argv[1:])
# Soft-RoCE under TCG emulation: ~0.2-5 ms; anything under 1 s is "working".
assert 0 < tmin <= ttyp <= tmax, (tmin, ttyp, tmax)
assert 0 < tavg < 1e6 and ttyp < 1e6
PY
srv_row=$(awk '$1 ~ /^[0-9]+$/ && NF >= 9 {print; exit}' "$srv_out")
[[ -n $srv_row ]] || fail "no result row on the server side"
pass "t_min ${tmin} us, t_typical ${ttyp} us, t_avg ${tavg} us (${bytes} B x ${n})"
