#!/usr/bin/env bash
# roced's RDMA probes against perftest on the same link in the same run
# (the QEMU lab: Soft-RoCE between node1 and node2), the same work on both
# sides, round by round so both see the same host load:
#   latency:   roced p50 (rocectl probe --size S --iterations N) vs
#              ib_write_lat t_typical (-s S -n N)           goal: ratio <= 1.05
#   bandwidth: roced BW average (--kind bandwidth --size B --iterations M) vs
#              ib_write_bw BW average (-s B -n M)           goal: ratio >= 0.95
#              (the same message count on both: ib_write_bw -D exits without
#              a result on Soft-RoCE here, so neither runs by duration)
# Polling: perftest busy-polls its completion queue and buffer on both
# ends. The headline ratios compare roced with --busy-poll (both of its ends
# busy-poll too: the same policy); roced's default policy (spin 2 ms, then
# yield, then sleep 50 us steps) is measured in the same rounds and reported
# beside them. The order alternates: odd rounds run perftest first, even
# rounds roced first.
# Every raw output (perftest's full text, roced's JSON results) goes to the
# log the script names at start and end.
#
# Not a timed test. Uses the lab named $LAB_NAME when it is up (with roced
# running), else brings up its own two-node lab and takes it down after.
#   bash bench/probe_vs_perftest.sh [ROUNDS]
# Environment: SIZE (latency, default 2), ITERS (default 1000), BW_SIZE
# (default 65536), BW_ITERS (messages per bandwidth run, default 1000),
# BENCH_LOG (default /tmp/roced-bench-probe-<time>.log).
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
BW_ITERS=${BW_ITERS:-1000}
LOG=${BENCH_LOG:-/tmp/roced-bench-probe-$(date -u +%Y%m%dT%H%M%SZ).log}
: >"$LOG"
echo "bench: raw outputs in $LOG"
raw() { printf '%s\n' "$*" >>"$LOG"; }
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
rctl() {  # as lab-admin: the lab's state file exports rocectl's certificates
  (source "/run/$LAB_NAME/state"; ip netns exec "$NS" "$ROCECTL" --target "$A1:7471" --timeout 60s -o json "$@")
}

# perftest NAME ARGS...: server on node2, client on node1; prints the
# client's first result row (the whole output goes to the log). A run that
# fails (Soft-RoCE under emulation now and then ends one with a
# work-completion error) is repeated, up to three times.
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
      raw "== $name $* (attempt $attempt)" "$out"
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
# roced_probe ARGS...: one probe from node1 to node2; prints its JSON
# result (also logged).
roced_probe() {
  local out
  out=$(rctl probe node2 "$@") || { raw "== rocectl probe $* FAILED" "$out"; echo "bench: rocectl probe $* failed" >&2; return 1; }
  raw "== rocectl probe $*" "$out"
  echo "$out"
}
field() { python3 -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }
ratio() { python3 -c 'import sys; a, b = map(float, sys.argv[1:]); print(f"{a / b:.3f}" if b > 0 else "nan")' "$1" "$2"; }

echo "date: $(date -u +%Y-%m-%dT%H:%MZ); host: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1); guests: QEMU TCG, Soft-RoCE"
echo "latency: $SIZE B x $ITERS round trips; bandwidth: $BW_SIZE B x $BW_ITERS messages; $ROUNDS rounds"
printf 'round first     ib_write_lat_typ_us  roced_busy_p50_us  roced_default_p50_us  lat_ratio  ib_write_bw_Gbps  roced_busy_Gbps  roced_default_Gbps  bw_ratio\n'
lat_ratios=()
bw_ratios=()
lat_default=()
bw_default=()
for ((r = 1; r <= ROUNDS; r++)); do
  roced_lat() {
    busy=$(roced_probe --size "$SIZE" --iterations "$ITERS" --busy-poll)
    polite=$(roced_probe --size "$SIZE" --iterations "$ITERS")
  }
  roced_bw() {
    busy_bw=$(roced_probe --kind bandwidth --size "$BW_SIZE" --iterations "$BW_ITERS" --busy-poll)
    polite_bw=$(roced_probe --kind bandwidth --size "$BW_SIZE" --iterations "$BW_ITERS")
  }
  if ((r % 2)); then
    first=perftest
    lat_row=$(perftest ib_write_lat -s "$SIZE" -n "$ITERS")
    roced_lat
    bw_row=$(perftest ib_write_bw -s "$BW_SIZE" -n "$BW_ITERS" --report_gbits)
    roced_bw
  else
    first=roced
    roced_lat
    lat_row=$(perftest ib_write_lat -s "$SIZE" -n "$ITERS")
    roced_bw
    bw_row=$(perftest ib_write_bw -s "$BW_SIZE" -n "$BW_ITERS" --report_gbits)
  fi
  ttyp=$(awk '{print $5}' <<<"$lat_row")
  bwavg=$(awk '{print $4}' <<<"$bw_row")
  p50=$(field "$busy" "j['latency']['p50Us']")
  p50d=$(field "$polite" "j['latency']['p50Us']")
  gbps=$(field "$busy_bw" "j['bandwidth']['gbps']")
  gbpsd=$(field "$polite_bw" "j['bandwidth']['gbps']")
  # Equal work: roced wrote as many messages as ib_write_bw did.
  msgs=$(field "$busy_bw" "j['bandwidth']['messages']")
  [[ $msgs == "$BW_ITERS" ]] || { echo "bench: roced wrote $msgs messages, not $BW_ITERS" >&2; exit 1; }
  lr=$(ratio "$p50" "$ttyp")
  br=$(ratio "$gbps" "$bwavg")
  lat_ratios+=("$lr")
  bw_ratios+=("$br")
  lat_default+=("$(ratio "$p50d" "$ttyp")")
  bw_default+=("$(ratio "$gbpsd" "$bwavg")")
  printf '%5d %-9s %19.2f  %17.2f  %20.2f  %9s  %16.4f  %15.4f  %18.4f  %8s\n' "$r" "$first" "$ttyp" "$p50" \
    "$p50d" "$lr" "$bwavg" "$gbps" "$gbpsd" "$br"
done
median() { printf '%s\n' "$@" | sort -n | awk '{a[NR]=$1} END{print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
range() { printf '%s\n' "$@" | sort -n | awk 'NR==1{lo=$1} {hi=$1} END{print lo "-" hi}'; }
echo
echo "latency ratio (roced --busy-poll p50 / ib_write_lat t_typical), median of $ROUNDS: $(median "${lat_ratios[@]}") (rounds $(range "${lat_ratios[@]}"))  (goal <= 1.05)"
echo "bandwidth ratio (roced --busy-poll / ib_write_bw BW average), median of $ROUNDS: $(median "${bw_ratios[@]}") (rounds $(range "${bw_ratios[@]}"))  (goal >= 0.95)"
echo "with roced's default polling: latency ratio $(median "${lat_default[@]}"), bandwidth ratio $(median "${bw_default[@]}") (medians)"
echo "bench: raw outputs in $LOG"
