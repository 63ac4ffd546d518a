#!/usr/bin/env bash
# The layering check itself: clean on the real tree, and it fails, naming
# the file, line and the rule, when lib/hal includes a header of
# lib/reconcile, when an agent/ sub-layer includes a higher one (core a
# header of runtimes, runtimes one of api), and when tools/ includes agent/
# (each on a copy of the tree with that one line added).
# Usage: layering_check_test.sh SOURCE_DIR
set -euo pipefail
SRC=$1
WORK=$(mktemp -d /tmp/roced-layering.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
pass=0 fail=0
ok() { echo "ok   - $*"; pass=$((pass + 1)); }
bad() { echo "FAIL - $*"; fail=$((fail + 1)); }

if python3 "$SRC/tests/layering_check.py" "$SRC"; then ok "the tree keeps its layers"; else bad "the tree breaks its layers"; fi

mkdir -p "$WORK/lib" "$WORK/agent" "$WORK/tools"
cp -r "$SRC/lib/." "$WORK/lib/"
cp -r "$SRC/agent/." "$WORK/agent/"
cp -r "$SRC/tools/." "$WORK/tools/"
sed -i '0,/^#include/s//#include "reconcile\/plan.h"\n#include/' "$WORK/lib/hal/paths.h"
set +e
out=$(python3 "$SRC/tests/layering_check.py" "$WORK"); rc=$?
set -e
echo "$out" | grep violation || true
if [ "$rc" = 1 ] && grep -q 'lib/hal/paths.h:[0-9]*: hal includes reconcile' <<<"$out"; then
  ok "lib/hal including lib/reconcile fails the check, naming the file and line"
else
  bad "lib/hal including lib/reconcile was not caught (exit $rc)"
fi
# agent/ from tools/ is also refused.
cp -r "$SRC/tools/." "$WORK/tools/"
cp "$SRC/lib/hal/paths.h" "$WORK/lib/hal/paths.h"
echo '#include "agent/core/agent.h"' >>"$WORK/tools/rocectl/format.h"
set +e
out=$(python3 "$SRC/tests/layering_check.py" "$WORK"); rc=$?
set -e
if [ "$rc" = 1 ] && grep -q 'tools includes agent' <<<"$out"; then ok "tools/ including agent/ fails the check"; else bad "tools/ including agent/ was not caught"; fi
# agent/'s sub-layers: core below runtimes below api below serve.
cp "$SRC/tools/rocectl/format.h" "$WORK/tools/rocectl/format.h"
echo '#include "agent/runtimes/probe_runtime.h"' >>"$WORK/agent/core/event_bus.h"
set +e
out=$(python3 "$SRC/tests/layering_check.py" "$WORK"); rc=$?
set -e
if [ "$rc" = 1 ] && grep -q 'agent/core/event_bus.h:[0-9]*: agent/core includes agent/runtimes' <<<"$out"; then
  ok "agent/core including agent/runtimes fails the check, naming the file and line"
else
  bad "agent/core including agent/runtimes was not caught (exit $rc)"
fi
cp "$SRC/agent/core/event_bus.h" "$WORK/agent/core/event_bus.h"
echo '#include "agent/api/gate.h"' >>"$WORK/agent/runtimes/mesh_runtime.cc"
echo '#include "agent/flags.h"' >>"$WORK/agent/serve/server.cc"
set +e
out=$(python3 "$SRC/tests/layering_check.py" "$WORK"); rc=$?
set -e
if [ "$rc" = 1 ] && grep -q 'agent/runtimes/mesh_runtime.cc:[0-9]*: agent/runtimes includes agent/api' <<<"$out" &&
   grep -q 'agent/serve/server.cc:[0-9]*: agent/serve includes agent ' <<<"$out"; then
  ok "agent/runtimes including agent/api and agent/serve including agent/'s top fail the check"
else
  bad "an agent/ sub-layer including a higher one was not caught (exit $rc)"
fi
echo "layering_check: $pass passed, $fail failed"
[ "$fail" = 0 ]
