#!/usr/bin/env bash
# Long libFuzzer runs of roced's fuzz targets (tests/fuzz; ctest -L fuzz
# runs each for only 60 s), one target after another, each from a scratch
# copy of its seed corpus (tests/fuzz/corpus/<name>, never written).
#
# Prints per target: executions, exec/s, the corpus it ended with (inputs,
# size), coverage as libFuzzer's last stats line gives it (cov: edges,
# ft: features) and whether it found something (crash, leak, UB report,
# timeout or a violated property), with the path of the input it left.
# Exits 1 when any target found something, 2 on usage errors.
#
# Builds nothing: uses BUILD_DIR/bin/<name>_fuzz (default ./build-fuzz):
#   CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DROCED_FUZZ=ON
#   cmake --build build-fuzz -j2 --target roced_fuzz
# Usage:
#   bash bench/fuzz.sh [BUILD_DIR] [--minutes N] [--target NAME]...
# --minutes N  per target (default 10)
# --target N   only this target (repeatable); default all six
# Logs and found inputs go to BUILD_DIR/fuzz-bench/<time>/ (printed).
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BUILD=$SRC/build-fuzz
MINUTES=10
TARGETS=()
while [ $# -gt 0 ]; do
  case $1 in
    --minutes) MINUTES=${2:?--minutes needs a number}; shift 2 ;;
    --target) TARGETS+=("${2:?--target needs a name}"); shift 2 ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    -*) echo "fuzz.sh: unknown option $1" >&2; exit 2 ;;
    *) BUILD=$1; shift ;;
  esac
done
[[ $MINUTES =~ ^[0-9]+$ ]] && [ "$MINUTES" -gt 0 ] || { echo "fuzz.sh: --minutes takes a whole number > 0" >&2; exit 2; }
[ ${#TARGETS[@]} -gt 0 ] || TARGETS=(config_yaml config_proto accepted_state apply_journal hal_text netlink)
BIN=$(cd "$BUILD/bin" 2>/dev/null && pwd) || { echo "fuzz.sh: no $BUILD/bin (build it first)" >&2; exit 2; }
for t in "${TARGETS[@]}"; do
  [ -d "$SRC/tests/fuzz/corpus/$t" ] || { echo "fuzz.sh: unknown target $t" >&2; exit 2; }
  [ -x "$BIN/${t}_fuzz" ] || { echo "fuzz.sh: missing $BIN/${t}_fuzz (build target roced_fuzz)" >&2; exit 2; }
done

OUT=$BUILD/fuzz-bench/$(date +%Y%m%d-%H%M%S)
WORK=$(mktemp -d /tmp/roced-fuzz-bench.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$OUT"
echo "fuzz.sh: ${#TARGETS[@]} target(s), $MINUTES min each; logs in $OUT"

rows=()
found=0
for t in "${TARGETS[@]}"; do
  corpus=$WORK/$t
  mkdir -p "$corpus" "$OUT/$t"
  cp -r "$SRC/tests/fuzz/corpus/$t/." "$corpus/"
  log=$OUT/$t.log
  echo "fuzz.sh: $t ($(date +%T))"
  rc=0
  "$BIN/${t}_fuzz" -max_total_time=$((MINUTES * 60)) -rss_limit_mb=2048 -timeout=25 \
    -print_final_stats=1 -artifact_prefix="$OUT/$t/" "$corpus" >"$log" 2>&1 || rc=$?
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -1)
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log" | tail -1)
  # The last status line ("#N DONE cov: C ft: F corp: U/S ..."), also
  # when the run ended on a finding.
  last=$(grep -E '^#[0-9]+[[:space:]].* cov: ' "$log" | tail -1 || true)
  cov=$(sed -n 's/.* cov: \([0-9]*\).*/\1/p' <<<"$last")
  ft=$(sed -n 's/.* ft: \([0-9]*\).*/\1/p' <<<"$last")
  [ -n "$execs" ] || execs=$(sed -n 's/^#\([0-9]*\).*/\1/p' <<<"$last")
  files=$(find "$corpus" -type f | wc -l)
  bytes=$(du -sk --apparent-size "$corpus" | cut -f1)
  if [ "$rc" -eq 0 ]; then
    result=ok
  else
    found=1
    input=$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -1)
    result="FOUND (exit $rc): ${input:-see $log}"
  fi
  rows+=("$(printf '%-15s %12s %8s %7s %8s %6s %6s  %s' "$t" "${execs:-?}" "${rate:-?}" "$files" \
    "${bytes}K" "${cov:-?}" "${ft:-?}" "$result")")
done

echo
printf '%-15s %12s %8s %7s %8s %6s %6s  %s\n' target executions exec/s inputs corpus cov ft result
printf '%s\n' "${rows[@]}"
echo "(cov: code edges reached, ft: libFuzzer features; $MINUTES min each, $(nproc) CPUs, load $(cut -d' ' -f1 /proc/loadavg))"
exit "$found"
