#!/usr/bin/env bash
# What `rocectl rollout`'s state file writes over a whole rollout, for 100,
# 1,000 and 10,000 simulated nodes: the snapshot and journal
# (RolloutStateWriter) against the reference measured in the same run, the
# whole state rewritten after every step (SaveRolloutState), which the
# journal replaced. No agents: bench/rollout_state.cc (roced_rollout_state)
# drives the state through the steps the rollout records, in its order
# (per node applying, waiting, gates, confirmed; a config of 1 KiB of JSON
# recorded as each node's previous one), and writes the new scheme to a
# scratch directory for real (fdatasync and all). The old scheme's bytes
# are counted exactly without being written (hundreds of GB at 10,000
# nodes); at 100 nodes it is also written for real, and the two counts must
# agree.
#
# Prints per fleet size and --max-unavailable: the batches, the bytes each
# scheme writes over the rollout, the ratio old/new, the most the new one
# holds on disk at once (snapshot + journal) and the final state's size,
# and the new scheme's wall time. Exits 1 when a count disagrees or the
# files read back differ from the state in memory.
#
# Not a timed test: run by hand after building roced_rollout_state:
#   bash bench/rollout_state.sh [BUILD_DIR] [--nodes "100 1000 10000"]
#        [--max-unavailable "10% 1"] [--config-bytes 1024] [--dir DIR]
# --dir: where the new scheme writes (default a scratch directory under
# /tmp, on whatever disk /tmp is); its wall time includes the fdatasyncs.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$SRC/build
NODES="100 1000 10000"
MAXU="10% 1"
CONFIG_BYTES=1024
DIR=
while [ $# -gt 0 ]; do
  case $1 in
    --nodes) NODES=$2; shift 2 ;;
    --max-unavailable) MAXU=$2; shift 2 ;;
    --config-bytes) CONFIG_BYTES=$2; shift 2 ;;
    --dir) DIR=$2; shift 2 ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    *) BUILD=$1; shift ;;
  esac
done
BIN=$BUILD/bin/roced_rollout_state
[ -x "$BIN" ] || { echo "missing $BIN (ninja -C $BUILD roced_rollout_state)" >&2; exit 2; }
WORK=${DIR:-$(mktemp -d /tmp/roced-rollout-state.XXXXXX)}
[ -n "$DIR" ] || trap 'rm -rf "$WORK"' EXIT

echo "rocectl rollout state file: bytes written over a whole rollout, ${CONFIG_BYTES} B configs"
echo "$(date -u +%Y-%m-%dT%H:%M:%SZ)  $(uname -n)  $(nproc) cores  scratch: $(df -P "$WORK" | awk 'NR==2{print $1}')"
printf '%7s %6s %7s  %14s %12s %9s  %10s %10s %8s\n' nodes maxu batches "old (rewrite)" "new (journal)" "old/new" \
  "new peak" "state" "new s"
status=0
for n in $NODES; do
  for m in $MAXU; do
    real=()
    [ "$n" -le 100 ] && real=(--old-real)
    rm -rf "$WORK/run"
    line=$("$BIN" --nodes "$n" --max-unavailable "$m" --config-bytes "$CONFIG_BYTES" --dir "$WORK/run" "${real[@]}")
    declare -A v=()
    for kv in $line; do v[${kv%%=*}]=${kv#*=}; done
    if [ -n "${v[old_real_bytes]:-}" ] && [ "${v[old_real_bytes]}" != "${v[old_bytes]}" ]; then
      echo "old scheme: counted ${v[old_bytes]} B, written ${v[old_real_bytes]} B: the count is wrong" >&2
      status=1
    fi
    [ "${v[verified]}" = 1 ] || { echo "nodes=$n: the files read back differ from the state" >&2; status=1; }
    printf '%7s %6s %7s  %14s %12s %8.0fx  %10s %10s %8.1f\n' "$n" "$m" "${v[batches]}" \
      "$(numfmt --to=iec --suffix=B "${v[old_bytes]}")" "$(numfmt --to=iec --suffix=B "${v[new_bytes]}")" \
      "${v[ratio]}" "$(numfmt --to=iec --suffix=B "${v[new_peak_bytes]}")" \
      "$(numfmt --to=iec --suffix=B "${v[state_bytes]}")" "${v[new_seconds]}"
    [ -z "${v[old_seconds]:-}" ] ||
      echo "        (old scheme written for real at $n nodes: ${v[old_real_bytes]} B, as counted, in ${v[old_seconds]} s)"
    unset v
  done
done
exit $status
