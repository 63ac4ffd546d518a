#!/usr/bin/env bash
# Sets up, builds and runs every roced test on a Debian 12 machine (as root):
# installs what the build and tests need (idempotent); the release build
# (GCC, -O2, the test files -Og); the QEMU lab and the routed lab, with
# beside them the release unit and e2e tests and, at nice 19, the ASan+UBSan
# and TSan builds (clang; each build's tests start once it is done), the
# libFuzzer targets (clang) and last each fuzz target for its executions.
# Stages that mostly wait get work beside them; the table at the end gives
# each stage's wall time (docs/ci.md says why this order). Every build treats
# warnings as errors, links with mold and compiles through ccache (a cold
# cache is the CI case: nothing is reused, nothing is wrong).
# Options: --quick  skip the sanitizer builds and the fuzzing (local iteration)
#          --no-lab skip the QEMU lab tests
# Environment: JOBS (2), ROCED_CCACHE_DIR (/var/cache/roced-ccache; outside
# the checkout, so a fresh clone reuses it), ROCED_CCACHE=0 (no ccache).
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
lab=1
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-lab) lab=0 ;;
    -h|--help) sed -n '2,15p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

JOBS=${JOBS:-2}
source scripts/stages.sh

deps() {
  bash scripts/setup-deps.sh
  if [ "$lab" = 1 ]; then bash tests/lab/setup.sh; fi
}
stage_fg "dependencies" deps

# ccache, keyed on the compiler (its size and mtime) and the whole command
# line, so the four builds never share an object. Depend mode: on a miss
# the compiler runs once, with no extra preprocessor pass, so a cold cache
# costs next to nothing. BASEDIR and NOHASHDIR let another clone of the
# repository hit the same entries (the paths in debug info then name the
# clone that filled the cache).
launcher=()
if [ "${ROCED_CCACHE:-1}" = 1 ] && command -v ccache >/dev/null; then
  export CCACHE_DIR=${ROCED_CCACHE_DIR:-/var/cache/roced-ccache}
  export CCACHE_BASEDIR=$PWD CCACHE_NOHASHDIR=1 CCACHE_DEPEND=1 CCACHE_MAXSIZE=${CCACHE_MAXSIZE:-8G}
  export CCACHE_SLOPPINESS=pch_defines,time_macros,include_file_mtime,include_file_ctime
  mkdir -p "$CCACHE_DIR"
  ccache -z >/dev/null
  launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
fi

build() {  # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DROCED_WERROR=ON "${launcher[@]}" "$@" >/dev/null
  cmake --build "$dir" -j"$JOBS"
}

# Sanitizer runs: unit and e2e tests under each sanitizer, each GoogleTest
# binary as one process (its "suite" ctest test: a sanitized process's
# start-up, about half a second, paid 45 times instead of 640; the
# per-test discovery is not even built, ROCED_DISCOVER_TESTS=OFF). Only the
# binaries labelled suite-retry and the e2e-timers tests (they wait on real
# timers: confirm deadlines, leases, watchdog windows, reconcile intervals,
# which a 5-20x slower sanitized binary on a loaded 2-core machine can
# overrun) are retried once; any other failure, and a retried one that fails
# twice, fails the run. --gtest_brief prints only the failing tests.
sanitized_tests() {  # sanitized_tests BUILD_DIR
  ctest --test-dir "$1" -L 'suite|e2e' -LE 'suite-retry|timers' --output-on-failure -j"$JOBS"
  ctest --test-dir "$1" -L 'suite-retry|e2e-timers' --output-on-failure -j"$JOBS" --repeat until-pass:2
}
asan_tests() {
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" sanitized_tests build-asan
}
tsan_tests() {
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
    sanitized_tests build-tsan
}
# The ASan tests (the last sanitizer tests), then a marker the routed lab
# waits for (below).
asan_tests_marked() {
  local rc=0
  asan_tests || rc=$?
  : >"$STAGE_LOGS/sanitizer-tests.done"
  return "$rc"
}
# The sanitizer builds keep line tables only (-g1): their reports' stacks
# still name function, file and line, and the builds take about a tenth less.
# They use clang (libFuzzer's compiler; the release build is GCC, Debian's
# compiler): an ASan+UBSan test file takes about half GCC's CPU with clang,
# and the whole ASan build about a third. Two compilers' warnings, both as
# errors, come with it.
sanitizer_build() {  # sanitizer_build DIR address|thread [cmake args...]
  local dir=$1 sanitizer=$2; shift 2
  CC=clang CXX=clang++ build "$dir" -DCMAKE_BUILD_TYPE=Debug -DROCED_SANITIZE="$sanitizer" -DROCED_PCH=ON \
    -DROCED_DISCOVER_TESTS=OFF -DCMAKE_UNITY_BUILD=ON -DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1 "$@"
}
# Eight targets, each for a fixed number of executions (what 15 s gave it
# with both cores to two targets; tests/fuzz/CMakeLists.txt), so the work
# is the same beside the labs at nice 19 as alone; 10 minutes is the cap. A
# finding, or a target the cap stops short, fails the run; a finding's input
# is left in build-fuzz/fuzz-artifacts/. bench/fuzz.sh runs them for longer.
# Its own build (RelWithDebInfo, -O2): folded into the -O0 ASan build it
# would save a few minutes of compiling and cost more of fuzzing for the
# same executions.
fuzz_build() {
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DROCED_WERROR=ON -DROCED_FUZZ=ON \
    -DROCED_FUZZ_RUNS=ON -DROCED_FUZZ_SECONDS=600 -DCMAKE_UNITY_BUILD=ON "${launcher[@]}" >/dev/null
  cmake --build build-fuzz -j"$JOBS" --target roced_fuzz
}
fuzz_run() { ctest --test-dir build-fuzz -L fuzz --output-on-failure -j"$JOBS"; }
# The release build has no precompiled headers, so it also proves that each
# test file includes what it uses. -O2 as RelWithDebInfo, without its debug
# info: a fifth less compile time. The test binaries' own files at -Og (the
# code they test is the -O2 libraries'): 0.62 of their -O2 compile time.
release_build() {
  build build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
    -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG" -DROCED_TEST_CXX_FLAGS=-Og
}
# The package stage (label package, tests/CMakeLists.txt): the .deb from
# the release build (cpack installs what the build made; nothing is
# compiled), installed here with dpkg -i, its unit verified by systemd,
# the installed agent started as the unit starts it, the package purged;
# and the container recipe's context configured. About 25 s, most of it
# dpkg-shlibdeps deriving the Depends.
package_tests() { ctest --test-dir build -L package --output-on-failure; }
# Unit and e2e tests run two at a time but those waiting on real timers,
# which run alone, as the lab tests do (they share one lab: their
# RESOURCE_LOCK).
release_tests() {
  ctest --test-dir build -L 'unit|e2e' -LE timers --output-on-failure -j"$JOBS"
  ctest --test-dir build -L timers --output-on-failure --repeat until-pass:2
}

# The order: the release build first, at full speed (the labs run its
# roced and rocectl; building only those first and the test binaries beside
# the lab is shorter, but the lab's guests, with a GCC build beside them,
# miss their deadlines); then
# the lab, which leaves more than half the CPU idle (its guests wait on
# timers and on each other), and beside it, one after another, the
# TSan and the ASan+UBSan builds, the fuzz build and the fuzz run, all at nice
# 19 (the kernel gives the lab's QEMU processes the CPU whenever they want
# it); the release unit and e2e tests from the lab's start, and each
# sanitizer build's tests as soon as it is done, at normal priority (they
# mostly wait on timers too). TSan first: its tests are the longer, and the
# routed lab waits for the sanitizer tests. The fuzz run is budgeted in
# executions, not seconds, so it does the same work there as alone.
at_nice19() { renice -n 19 -p "$BASHPID" >/dev/null; "$@"; }
beside_labs() {
  local pids=() outs=() rc=0 i
  # However this job ends (a sanitizer build that fails ends it), the routed
  # lab stops waiting for the sanitizer tests.
  trap ': >"$STAGE_LOGS/sanitizer-tests.done"' EXIT
  substage "release unit and e2e tests" release_tests >"$STAGE_LOGS/release-tests.out" 2>&1 &
  pids+=($!) outs+=(release-tests)
  substage "package (.deb, install, verify)" package_tests >"$STAGE_LOGS/package.out" 2>&1 &
  pids+=($!) outs+=(package)
  if [ "$quick" = 0 ]; then
    substage "TSan build" at_nice19 sanitizer_build build-tsan thread
    substage "TSan tests" tsan_tests >"$STAGE_LOGS/tsan-tests.out" 2>&1 &
    pids+=($!) outs+=(tsan-tests)
    substage "ASan build" at_nice19 sanitizer_build build-asan address
    substage "ASan tests" asan_tests_marked >"$STAGE_LOGS/asan-tests.out" 2>&1 &
    pids+=($!) outs+=(asan-tests)
    substage "fuzz build" at_nice19 fuzz_build
    substage "fuzz run" at_nice19 fuzz_run
  fi
  for i in "${!pids[@]}"; do
    wait "${pids[$i]}" || rc=1
    cat "$STAGE_LOGS/${outs[$i]}.out"
  done
  return "$rc"
}
stage_fg "release build" release_build
STAGE_NICE=0 stage_bg "beside the labs" beside_labs

# Lab tests boot TCG guests (no KVM here) on a 2-core machine: one emulated
# instruction stream per guest. Each lab test is retried once; a test that
# fails twice fails the run, and every first failure is listed at the end
# (with its output above) so a flaky test shows in the log instead of hiding.
lab_first_failures=$STAGE_LOGS/lab-first-failures
lab_status=$STAGE_LOGS/lab-status
lab_fail_reasons=$STAGE_LOGS/lab-fail-reasons
lab_stage() {  # lab_stage LABEL: ctest -L LABEL; first failures and status noted
  local log=$STAGE_LOGS/lab-$1.log rc=0
  # Only the lab's directory: ctest reads the lab's tests and not the ~800
  # unit and e2e entries.
  ctest --test-dir build/tests/lab -L "$1" --output-on-failure --repeat until-pass:2 2>&1 | tee "$log" || rc=$?
  grep -E 'Test +#[0-9]+: .*\*\*\*' "$log" >>"$lab_first_failures" || true
  # Why each failed run failed: its FAIL line (lib.sh's fail) and the two
  # lines after it, cut to 300 columns, so the end of the run says why
  # without the whole log (CI keeps only the tail).
  grep -E -A2 '^\[[A-Za-z0-9_]+\] FAIL: ' "$log" | cut -c1-300 >>"$lab_fail_reasons" || true
  # A failed lab does not stop the run before the sanitizer tests: its
  # status is the run's at the end.
  [ "$rc" = 0 ] || echo "$1: ctest exited $rc" >>"$lab_status"
}
if [ "$lab" = 1 ]; then
  : >"$lab_first_failures"
  : >"$lab_status"
  : >"$lab_fail_reasons"
  stage_fg "lab" lab_stage lab
  # The routed lab (its own six guests) once the shared lab is down, and
  # once the sanitizer tests are done: they run at normal priority beside
  # the six guests on two cores (a suspected cause of mesh_routed's
  # failures, not a proven one). Usually they end first; at most 15 minutes
  # are waited (a failed build never marks). The fuzz run, at nice 19, may go on beside.
  wait_sanitizer_tests() {
    local waited=0
    while [ "$quick" = 0 ] && [ ! -e "$STAGE_LOGS/sanitizer-tests.done" ] && [ "$waited" -lt 900 ]; do
      sleep 5
      waited=$((waited + 5))
    done
  }
  stage_fg "waiting for the sanitizer tests" wait_sanitizer_tests
  stage_fg "routed lab" lab_stage routed
fi
stage_join "beside the labs"
if [ "${#launcher[@]}" -gt 0 ]; then
  step "ccache (this run's hits and misses; a clean machine's run hits nothing)"
  ccache -s | grep -E 'Hits|Misses|Cache size' || true
fi
if [ "$lab" = 1 ]; then
  step "lab test runs that failed (a test listed once passed on its retry)"
  if [ -s "$lab_first_failures" ]; then
    cat "$lab_first_failures"
    echo "why (each failed run's FAIL line; a run that timed out has none):"
    sed 's/^/  /' "$lab_fail_reasons"
  else
    echo "none"
  fi
  if [ -s "$lab_status" ]; then cat "$lab_status"; exit 1; fi
fi
