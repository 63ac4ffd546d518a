#!/usr/bin/env bash
# Files that are not regular files, or too large, are refused before they
# are read, quickly and with the reason, by the real binaries: roced
# --check-config and rocectl apply -f on /dev/zero and on a FIFO (both once
# read until memory ran out, or blocked), and a sparse config over 1 MiB.
# rocectl refuses before it connects (--socket names nothing).
# Usage: file_reads_e2e.sh BIN_DIR
set -euo pipefail
BIN=$1
WORK=$(mktemp -d /tmp/roced-filereads-e2e.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
mkfifo "$WORK/fifo"
truncate -s $((1048576 + 1)) "$WORK/big.yaml"
pass=0
fail=0

# expect WHAT PATTERN CMD...: CMD exits non-zero within 10 s, its stderr matching PATTERN.
expect() {
  local what=$1 pattern=$2 rc=0
  shift 2
  timeout 10 "$@" >"$WORK/out" 2>&1 || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && grep -q -- "$pattern" "$WORK/out"; then
    echo "ok   - $what"; pass=$((pass + 1))
  else
    echo "FAIL - $what (exit $rc)"; sed 's/^/    /' "$WORK/out"; fail=$((fail + 1))
  fi
}

REG="a regular file is required"
expect "roced --check-config /dev/zero" "config file /dev/zero is a character device; $REG" \
  "$BIN/roced" --check-config --config /dev/zero
expect "roced --check-config FIFO" "config file $WORK/fifo is a FIFO; $REG" \
  "$BIN/roced" --check-config --config "$WORK/fifo"
expect "roced --check-config over 1 MiB" "is 1048577 bytes; at most 1048576 are read" \
  "$BIN/roced" --check-config --config "$WORK/big.yaml"
expect "rocectl apply -f /dev/zero" "config file /dev/zero is a character device; $REG" \
  "$BIN/rocectl" --socket "$WORK/none.sock" apply -f /dev/zero
expect "rocectl apply -f FIFO" "config file $WORK/fifo is a FIFO; $REG" \
  "$BIN/rocectl" --socket "$WORK/none.sock" apply -f "$WORK/fifo"
expect "rocectl apply -f over 1 MiB" "is 1048577 bytes; at most 1048576 are read" \
  "$BIN/rocectl" --socket "$WORK/none.sock" apply -f "$WORK/big.yaml"

echo "$pass passed, $fail failed"
[ "$fail" = 0 ]
