#!/usr/bin/env bash
# The layering check (tests/layering_check.py): clean on the real tree; on a
# copy, it fails naming the file and line when an #include climbs with ".."
# or agent/ builds a metric family,
# fails when a layer's dependencies in the CMake files change and
# docs/design.md's table does not, and --write brings the table back in line.
# (That the build refuses an undeclared include is tests/layering/.)
# Usage: layering_check_test.sh SOURCE_DIR
set -euo pipefail
SRC=$1
WORK=$(mktemp -d /tmp/roced-layering.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"

check "the tree keeps its layers and design.md's table" python3 "$SRC/tests/layering_check.py" "$SRC"

for tree in lib agent tools docs; do cp -r "$SRC/$tree" "$WORK/"; done
run_check() { set +e; out=$(python3 "$SRC/tests/layering_check.py" "$WORK" "$@"); rc=$?; set -e; }

echo '#include "../reconcile/plan.h"' >>"$WORK/lib/hal/paths.h"
run_check
if [ "$rc" = 1 ] && grep -q 'lib/hal/paths.h:[0-9]*: #include "../reconcile/plan.h" climbs' <<<"$out"; then
  ok "an include climbing with .. fails the check, naming the file and line"
else
  echo "$out"; bad "an include climbing with .. was not caught (exit $rc)"
fi
cp "$SRC/lib/hal/paths.h" "$WORK/lib/hal/paths.h"

echo 'auto* f = &prometheus::BuildGauge().Name("x").Help("x").Register(r);' >>"$WORK/agent/runtimes/mesh_runtime.cc"
run_check
if [ "$rc" = 1 ] && grep -q 'agent/runtimes/mesh_runtime.cc:[0-9]*: a metric family built outside lib/metrics' <<<"$out"; then
  ok "a metric family built in agent/ fails the check, naming the file and line"
else
  echo "$out"; bad "a metric family outside lib/metrics was not caught (exit $rc)"
fi
cp "$SRC/agent/runtimes/mesh_runtime.cc" "$WORK/agent/runtimes/mesh_runtime.cc"

# metrics declares model: the CMake graph changes, the table must follow.
sed -i 's/^  DEPS roced_hal prometheus-cpp::core)/  DEPS roced_hal roced_model prometheus-cpp::core)/' "$WORK/lib/CMakeLists.txt"
grep -q 'DEPS roced_hal roced_model prometheus-cpp::core' "$WORK/lib/CMakeLists.txt" || bad "the test's edit of lib/CMakeLists.txt did not apply"
run_check
if [ "$rc" = 1 ] && grep -q "design.md: the layer table is not the CMake files' graph" <<<"$out"; then
  ok "a dependency added in CMake and not in docs/design.md fails the check"
else
  echo "$out"; bad "a stale design.md table was not caught (exit $rc)"
fi
run_check --write
run_check
if [ "$rc" = 0 ] && grep -q '^reconcile, probe, metrics  *->  hal, model$' "$WORK/docs/design.md"; then
  ok "--write rewrites the table from CMake (metrics joins reconcile and probe on hal, model)"
else
  echo "$out"; bad "--write did not bring the table in line (exit $rc)"
fi
finish
