#!/usr/bin/env bash
# The function-length check itself: clean on the real tree (no function in
# agent/, lib/, tools/ or bench/ over 80 lines), and it fails, naming the
# file, the line and the length, on a copy where one function grows past the
# limit (in lib/, and in tools/ nested below its top folder); members defined
# inside a class body are measured one by one.
# Usage: function_length_check_test.sh SOURCE_DIR
set -euo pipefail
SRC=$1
WORK=$(mktemp -d /tmp/roced-fnlen.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
pass=0 fail=0
ok() { echo "ok   - $*"; pass=$((pass + 1)); }
bad() { echo "FAIL - $*"; fail=$((fail + 1)); }

if python3 "$SRC/tests/function_length_check.py" --root "$SRC"; then ok "no function over 80 lines"; else bad "a function is over 80 lines"; fi

mkdir -p "$WORK/lib/util" "$WORK/agent" "$WORK/tools/rocectl"
{
  echo 'namespace roced {'
  echo 'int Long() {'
  echo '  int x = 0;'
  for i in $(seq 1 85); do echo "  x += $i;  // \"}\" in a comment and a string: \"{\""; done
  echo '  return x;'
  echo '}'
  echo 'class Holder {'
  echo ' public:'
  echo '  int Short() { return 1; }'
  echo '};'
  echo '}  // namespace roced'
} >"$WORK/lib/util/long.cc"
sed 's/int Long()/int LongCommand()/' "$WORK/lib/util/long.cc" >"$WORK/tools/rocectl/long_cmd.cc"
set +e
out=$(python3 "$SRC/tests/function_length_check.py" --root "$WORK"); rc=$?
set -e
echo "$out"
if [ "$rc" = 1 ] && grep -q '^lib/util/long.cc:2: 89 lines (limit 80): int Long()' <<<"$out"; then
  ok "an 89-line function fails the check, named with its file, line and length"
else
  bad "the 89-line function was not reported as expected (exit $rc)"
fi
if [ "$rc" = 1 ] && grep -q '^tools/rocectl/long_cmd.cc:2: 89 lines (limit 80): int LongCommand()' <<<"$out"; then
  ok "tools/ is checked too, below its top folder"
else
  bad "the 89-line function in tools/rocectl was not reported"
fi
if grep -q 'Short' <<<"$out"; then bad "a short member function was reported"; else ok "a short member function inside a class is not reported"; fi
echo "function_length_check: $pass passed, $fail failed"
[ "$fail" = 0 ]
