#!/usr/bin/env bash
# Sets up, builds and runs every roced test on a Debian 12 machine (as root):
#   1. installs the packages the build and tests need (idempotent),
#   2. builds with ASan+UBSan and with TSan and runs the unit and e2e tests
#      under each (precompiled headers, ROCED_PCH, in these two builds),
#   3. builds the libFuzzer targets with clang (ASan+UBSan, build-fuzz) and
#      runs each for 30 s on its seed corpus (ctest -L fuzz),
#   4. does the release build (-O2) and runs all ctest labels (unit, e2e,
#      lab). Every build treats warnings as errors and links with mold.
# Options: --quick  skip the sanitizer builds and the fuzzing (local iteration)
#          --no-lab skip the QEMU lab tests
set -euo pipefail
cd "$(dirname "$0")/.."

quick=0
lab=1
for arg in "$@"; do
  case "$arg" in
    --quick) quick=1 ;;
    --no-lab) lab=0 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "test.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

JOBS=${JOBS:-2}
step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

step "dependencies"
bash scripts/setup-deps.sh
if [ "$lab" = 1 ] && [ -x tests/lab/setup.sh ]; then
  bash tests/lab/setup.sh
fi

build() {  # build DIR [cmake args...]
  local dir=$1; shift
  cmake -S . -B "$dir" -G Ninja -DROCED_WERROR=ON "$@" >/dev/null
  cmake --build "$dir" -j"$JOBS"
}

labels='unit|e2e'
[ "$lab" = 1 ] && labels='unit|e2e|lab'

# Sanitizer runs: unit and e2e tests under each sanitizer, each GoogleTest
# binary as one process (its "suite" ctest test: a sanitized process's
# start-up, about half a second, paid 42 times instead of 640). Only the
# binaries labelled suite-retry and the e2e-timers tests (they wait on real
# timers: confirm deadlines, leases, watchdog windows, reconcile intervals,
# which a 5-20x slower sanitized binary on a loaded 2-core machine can
# overrun) are retried once; any other failure, and a retried one that fails
# twice, fails the run. --gtest_brief prints only the failing tests.
sanitized_tests() {  # sanitized_tests BUILD_DIR
  ctest --test-dir "$1" -L 'suite|e2e' -LE 'suite-retry|timers' --output-on-failure -j"$JOBS"
  ctest --test-dir "$1" -L 'suite-retry|e2e-timers' --output-on-failure -j"$JOBS" --repeat until-pass:2
}
# The sanitizer builds keep line tables only (-g1): their reports' stacks
# still name function, file and line, and the builds take about a tenth less.
debug_lines=(-DCMAKE_CXX_FLAGS_DEBUG=-g1 -DCMAKE_C_FLAGS_DEBUG=-g1)
if [ "$quick" = 0 ]; then
  step "ASan+UBSan build and tests"
  build build-asan -DCMAKE_BUILD_TYPE=Debug -DROCED_SANITIZE=address -DROCED_PCH=ON "${debug_lines[@]}"
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    LSAN_OPTIONS="suppressions=$PWD/tests/lsan.supp" sanitized_tests build-asan

  step "TSan build and tests"
  build build-tsan -DCMAKE_BUILD_TYPE=Debug -DROCED_SANITIZE=thread -DROCED_PCH=ON "${debug_lines[@]}"
  TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1 suppressions=$PWD/tests/tsan.supp" \
    sanitized_tests build-tsan

  # Eight targets, 30 s each, two at a time: about 2 minutes plus the build.
  # A finding fails the run; its input is left in build-fuzz/fuzz-artifacts/.
  # bench/fuzz.sh runs them for longer.
  step "libFuzzer targets (clang, ASan+UBSan, 30 s each)"
  CC=clang CXX=clang++ cmake -S . -B build-fuzz -G Ninja -DROCED_WERROR=ON -DROCED_FUZZ=ON \
    -DROCED_FUZZ_SECONDS=30 >/dev/null
  cmake --build build-fuzz -j"$JOBS" --target roced_fuzz
  ctest --test-dir build-fuzz -L fuzz --output-on-failure -j"$JOBS"
fi

# The release build has no precompiled headers, so it also proves that each
# test file includes what it uses. Unit and e2e tests run two at a time but
# those waiting on real timers, which run alone, as the lab tests do (they
# share one lab: their RESOURCE_LOCK).
step "release build and all tests ($labels)"
# -O2 as RelWithDebInfo, without its debug info: a fifth less compile time.
build build -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_FLAGS_RELEASE="-O2 -DNDEBUG" \
  -DCMAKE_C_FLAGS_RELEASE="-O2 -DNDEBUG"
ctest --test-dir build -L 'unit|e2e' -LE timers --output-on-failure -j"$JOBS"
ctest --test-dir build -L timers --output-on-failure --repeat until-pass:2
# Lab tests boot TCG guests (no KVM here) on a 2-core machine: one emulated
# instruction stream per guest, so a step that takes 1 s on a quiet host can
# take 10 on a noisy one. Each lab test is retried once; a test that fails
# twice fails the run, and every first failure is listed at the end (with its
# output above) so a flaky test shows in the log instead of hiding.
if [ "$lab" = 1 ]; then
  lab_log=$(mktemp)
  lab_rc=0
  ctest --test-dir build -L lab --output-on-failure --repeat until-pass:2 2>&1 \
    | tee "$lab_log" || lab_rc=$?
  # The routed lab (its own six guests) once the shared lab is down.
  ctest --test-dir build -L routed --output-on-failure --repeat until-pass:2 2>&1 \
    | tee -a "$lab_log" || lab_rc=$?
  step "lab test runs that failed (a test listed once passed on its retry)"
  grep -E 'Test +#[0-9]+: .*\*\*\*' "$lab_log" || echo "none"
  rm -f "$lab_log"
  exit "$lab_rc"
fi
