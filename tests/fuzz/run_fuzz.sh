#!/usr/bin/env bash
# Runs one libFuzzer target on a scratch copy of its seed corpus (the ctest
# "fuzz" tests; nothing is written into the repo): for SECONDS, or, given
# RUNS, for RUNS executions with SECONDS as a cap (a run the cap stopped
# short of RUNS fails, saying how far it got). A crash, leak, timeout or UB
# report makes libFuzzer exit nonzero and leaves the input in ARTIFACT_DIR,
# whose path is printed.
# Usage: run_fuzz.sh BINARY CORPUS_DIR SECONDS ARTIFACT_DIR [RUNS]
set -euo pipefail
[ $# -eq 4 ] || [ $# -eq 5 ] || { sed -n '2,8p' "$0"; exit 2; }
bin=$1 seeds=$2 seconds=$3 artifacts=$4 runs=${5:-}
work=$(mktemp -d /tmp/roced-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$artifacts"
cp -r "$seeds/." "$work/corpus/"
rc=0
"$bin" -max_total_time="$seconds" ${runs:+-runs="$runs"} -rss_limit_mb=2048 -timeout=25 \
  -print_final_stats=1 -artifact_prefix="$artifacts/" "$work/corpus" 2>&1 | tee "$work/out" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "run_fuzz: $(basename "$bin") failed (exit $rc); inputs kept in $artifacts:" >&2
  ls -l "$artifacts" >&2 || true
  exit "$rc"
fi
if [ -n "$runs" ]; then
  done_runs=$(sed -n 's/^stat::number_of_executed_units: *\([0-9]*\).*/\1/p' "$work/out" | tail -n 1)
  if [ "${done_runs:-0}" -lt "$runs" ]; then
    echo "run_fuzz: $(basename "$bin") ran ${done_runs:-0} of its $runs executions before the ${seconds} s cap" >&2
    exit 1
  fi
  echo "run_fuzz: $(basename "$bin") ran its $runs executions"
fi
