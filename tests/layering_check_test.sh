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
# refused WHAT PATTERN: the check on $WORK fails, saying PATTERN.
refused() {
  run_check
  if [ "$rc" = 1 ] && grep -q -- "$2" <<<"$out"; then ok "$1 fails the check"; else echo "$out"; bad "$1 was not caught (exit $rc)"; fi
}

echo '#include "../reconcile/plan.h"' >>"$WORK/lib/hal/paths.h"
refused "an include climbing with .." 'lib/hal/paths.h:[0-9]*: #include "../reconcile/plan.h" climbs'
cp "$SRC/lib/hal/paths.h" "$WORK/lib/hal/paths.h"

# A header no source of its layer includes: the compiler would not see it.
echo '#include "hal/paths.h"' >>"$WORK/lib/util/utf8.h"
refused "util's header including hal" 'lib/util/utf8.h:[0-9]*: util includes hal (hal/paths.h), a layer it does not link'
cp "$SRC/lib/util/utf8.h" "$WORK/lib/util/utf8.h"
echo '#include "agent/core/agent.h"' >>"$WORK/agent/core/state_dir.h"
refused "agent/core's state files including the rest of agent/core" 'agent/core/state_dir.h:[0-9]*: agent/state includes agent/core'
cp "$SRC/agent/core/state_dir.h" "$WORK/agent/core/state_dir.h"
echo '#include <hal/../reconcile/plan.h>' >>"$WORK/lib/hal/paths.h"
refused "an angle-bracket include climbing with .." 'lib/hal/paths.h:[0-9]*: #include "hal/../reconcile/plan.h" climbs'
cp "$SRC/lib/hal/paths.h" "$WORK/lib/hal/paths.h"
echo 'target_include_directories(roced_hal PUBLIC ${CMAKE_SOURCE_DIR})' >>"$WORK/lib/CMakeLists.txt"
refused "an include directory at the source root" 'lib/CMakeLists.txt:[0-9]*: an include directory into the source tree'
cp "$SRC/lib/CMakeLists.txt" "$WORK/lib/CMakeLists.txt"
echo 'target_link_libraries(roced_hal PRIVATE roced_reconcile)' >>"$WORK/lib/CMakeLists.txt"
refused "a PRIVATE link the table does not show" "design.md: the layer table is not the CMake files' graph"
cp "$SRC/lib/CMakeLists.txt" "$WORK/lib/CMakeLists.txt"

echo 'auto* f = &prometheus::BuildGauge().Name("x").Help("x").Register(r);' >>"$WORK/agent/runtimes/mesh_runtime.cc"
refused "a metric family built in agent/" 'agent/runtimes/mesh_runtime.cc:[0-9]*: a metric family built outside lib/metrics'
cp "$SRC/agent/runtimes/mesh_runtime.cc" "$WORK/agent/runtimes/mesh_runtime.cc"

# metrics declares model: the CMake graph changes, the table must follow.
sed -i 's/^  DEPS roced_hal prometheus-cpp::core)/  DEPS roced_hal roced_model prometheus-cpp::core)/' "$WORK/lib/CMakeLists.txt"
grep -q 'DEPS roced_hal roced_model prometheus-cpp::core' "$WORK/lib/CMakeLists.txt" || bad "the test's edit of lib/CMakeLists.txt did not apply"
refused "a dependency added in CMake and not in docs/design.md" "design.md: the layer table is not the CMake files' graph"
run_check --write
run_check
if [ "$rc" = 0 ] && grep -q '^reconcile, probe, metrics  *->  hal, model$' "$WORK/docs/design.md"; then
  ok "--write rewrites the table from CMake (metrics joins reconcile and probe on hal, model)"
else
  echo "$out"; bad "--write did not bring the table in line (exit $rc)"
fi
finish
