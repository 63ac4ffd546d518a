#!/usr/bin/env bash
# roced's RDMA probes against perftest on the same link in the same run
# (the QEMU lab: Soft-RoCE between node1 and node2), interleaved round by
# round so both see the same host load:
#   latency:   roced p50 (rocectl probe --iterations N --size S) vs
#              ib_write_lat t_typical (-s S -n N)         goal: ratio <= 1.05
#   bandwidth: roced BW average (--kind bandwidth --size B --duration D) vs
#              ib_write_bw BW average (-s B -n BW_ITERS)  goal: ratio >= 0.95
#              (ib_write_bw -D exits 1 without a result on Soft-RoCE here, so
#              perftest runs a fixed count; both report a steady-state rate)
# Prints every round and the median of each ratio.
#
# Not a timed test. Uses the lab named $LAB_NAME when it is up (with roced
# running), else brings up its own two-node lab and takes it down after.
#   bash bench/probe_vs_perftest.sh [ROUNDS]
# Environment: SIZE (latency, default 2), ITERS (default 1000), BENCH_LOG
# (a file for perftest's raw result rows),
# BW_SIZE (default 65536), DURATION (seconds, default 3), BW_ITERS (default 200).
# Under TCG every guest has one emulated vCPU: the figures say how roced
# compares with perftest on this link, not what RoCE hardware does.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB=$SRC/tests/lab/lab
export LAB_NAME=${LAB_NAME:-roced-lab-bench}
ROUNDS=${1:-3}
SIZE=${SIZE:-2}
ITERS=${ITERS:-1000}
BW_SIZE=${BW_SIZE:-65536}
DURATION=${DURATION:-3}
BW_ITERS=${BW_ITERS:-200}
ROCECTL=${ROCECTL_BIN:-$SRC/build/bin/rocectl}

own_lab=0
if [[ ! -f /run/$LAB_NAME/state ]]; then
  echo "bench: bringing up lab $LAB_NAME (2 nodes)"
  "$LAB" up --nodes 2 >/dev/null
  own_lab=1
fi
cleanup() { ((own_lab)) && "$LAB" down >/dev/null 2>&1 || true; }
trap cleanup EXIT

NS=$("$LAB" netns)
A1=$("$LAB" addr node1)
A2=$("$LAB" addr node2)
gid_index() {
  "$LAB" exec "$1" -- sh -ec '
    d=/sys/class/infiniband/rxe0/ports/1
    for g in $d/gids/*; do
      i=${g##*/}
      case $(cat $g) in 0000:0000:0000:0000:0000:ffff:*) ;; *) continue ;; esac
      [ "$(cat $d/gid_attrs/types/$i)" = "RoCE v2" ] && { echo $i; exit 0; }
    done
    exit 1'
}
G1=$(gid_index node1)
G2=$(gid_index node2)
rctl() { ip netns exec "$NS" "$ROCECTL" --target "$A1:7471" --timeout 60s -o json "$@"; }

# perftest NAME ARGS...: server on node2, client on node1; prints the
# client's first result row. A run that fails (Soft-RoCE under emulation
# now and then ends one with a work-completion error) is repeated, up to
# three times.
perftest() {
  local name=$1 out row srv attempt
  shift
  for attempt in 1 2 3; do
    "$LAB" exec -t 300 node2 -- "$name" -d rxe0 -x "$G2" "$@" >/dev/null 2>&1 &
    srv=$!
    row=""
    for _ in $(seq 10); do
      sleep 1
      out=$("$LAB" exec -t 300 node1 -- "$name" -d rxe0 -x "$G1" "$@" "$A2" 2>&1) || true
      row=$(awk '$1 ~ /^[0-9]+$/ && NF >= 5 {print; exit}' <<<"$out")
      # perftest's cycle clock sometimes fails under emulation and prints
      # inf/nan for every figure: that run measured nothing.
      grep -qiE 'inf|nan' <<<"$row" && { out="figures are inf/nan: $row"; row=""; }
      [[ -n $row ]] && break
      kill -0 "$srv" 2>/dev/null || break  # the server gave up too
    done
    "$LAB" kill node2 "$name" >/dev/null 2>&1 || true
    wait "$srv" 2>/dev/null || true
    [[ -n $row ]] && { echo "$row"; return 0; }
    echo "bench: $name attempt $attempt failed: $(tail -1 <<<"$out")" >&2
  done
  return 1
}
field() { python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }

printf 'round  roced_p50_us  ib_write_lat_typ_us  lat_ratio  roced_Gbps  ib_write_bw_avg_Gbps  bw_ratio\n'
lat_ratios=()
bw_ratios=()
for ((r = 1; r <= ROUNDS; r++)); do
  lat_row=$(perftest ib_write_lat -s "$SIZE" -n "$ITERS")
  ttyp=$(awk '{print $5}' <<<"$lat_row")
  out=$(rctl probe node2 --size "$SIZE" --iterations "$ITERS")
  p50=$(field "$out" "j['latency']['p50Us']")

  bw_row=$(perftest ib_write_bw -s "$BW_SIZE" -n "$BW_ITERS" --report_gbits)
  bwavg=$(awk '{print $4}' <<<"$bw_row")
  out=$(rctl probe node2 --kind bandwidth --size "$BW_SIZE" --duration "${DURATION}s")
  gbps=$(field "$out" "j['bandwidth']['gbps']")

  ratio() { python3 -c 'import sys; a, b = map(float, sys.argv[1:]); print(f"{a / b:.3f}" if b > 0 else "nan")' "$1" "$2"; }
  lr=$(ratio "$p50" "$ttyp")
  br=$(ratio "$gbps" "$bwavg")
  echo "round $r: ib_write_lat row: $lat_row | ib_write_bw row: $bw_row" >>"${BENCH_LOG:-/dev/null}"
  lat_ratios+=("$lr")
  bw_ratios+=("$br")
  printf '%5d  %12.2f  %19.2f  %9s  %10.4f  %20.4f  %8s\n' "$r" "$p50" "$ttyp" "$lr" "$gbps" "$bwavg" "$br"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
echo
echo "latency ratio (roced p50 / ib_write_lat t_typical), median of $ROUNDS: $(median "${lat_ratios[@]}")  (goal <= 1.05)"
echo "bandwidth ratio (roced / ib_write_bw BW average), median of $ROUNDS: $(median "${bw_ratios[@]}")  (goal >= 0.95)"
