#!/usr/bin/env bash
# Runs one libFuzzer target for SECONDS on a scratch copy of its seed corpus
# (the ctest "fuzz" tests; nothing is written into the repo). A crash, leak,
# timeout or UB report makes libFuzzer exit nonzero and leaves the input in
# ARTIFACT_DIR, whose path is printed.
# Usage: run_fuzz.sh BINARY CORPUS_DIR SECONDS ARTIFACT_DIR
set -euo pipefail
[ $# -eq 4 ] || { sed -n '2,7p' "$0"; exit 2; }
bin=$1 seeds=$2 seconds=$3 artifacts=$4
work=$(mktemp -d /tmp/roced-fuzz.XXXXXX)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/corpus" "$artifacts"
cp -r "$seeds/." "$work/corpus/"
rc=0
"$bin" -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=25 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$work/corpus" || rc=$?
if [ "$rc" -ne 0 ]; then
  echo "run_fuzz: $(basename "$bin") failed (exit $rc); inputs kept in $artifacts:" >&2
  ls -l "$artifacts" >&2 || true
fi
exit "$rc"
