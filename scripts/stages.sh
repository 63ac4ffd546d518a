# Stages of scripts/test.sh, timed. Sourced, not run.
#   stage_fg NAME CMD...   runs CMD now, its output on the terminal
#   stage_bg NAME CMD...   starts CMD at nice 19 (STAGE_NICE), its output kept
#                          for the join: it takes only the CPU the foreground
#                          leaves idle
#   stage_join NAME        waits for a background stage, prints its output
#   substage NAME CMD...   inside a stage: a timed part with a row of its own
# Each CMD runs in a subshell under set -e (a function's failing command
# stops it, as at top level). Never call stage_fg or stage_bg as part of a
# condition or an && / || list: bash then ignores set -e in everything CMD
# runs, and a failing command inside it would not stop it. A failed stage ends the run with its status;
# the timing table (stage, start and wall time in minutes since the run
# began) is printed on every exit, and written to $STAGE_TIMES when set.
# shellcheck shell=bash

STAGE_T0=$(date +%s)
# Busy and all CPU time so far, in clock ticks (the first line of
# /proc/stat: user nice system idle iowait irq softirq steal).
stage_cpu_ticks() { awk '/^cpu / {print $2+$3+$4+$7+$8+$9, $2+$3+$4+$5+$6+$7+$8+$9; exit}' /proc/stat; }
STAGE_CPU0=$(stage_cpu_ticks)
STAGE_LOGS=$(mktemp -d /tmp/roced-stages.XXXXXX)
STAGE_ROWS=()
declare -A STAGE_PID=()

step() { printf '\n=== %s (%s)\n' "$*" "$(date +%T)"; }

stage_row() {  # stage_row NAME START END RC HOW
  STAGE_ROWS+=("$(printf '| %-30s | %5.1f | %5.1f | %s |' "$1" \
    "$(awk -v a="$2" -v t="$STAGE_T0" 'BEGIN{print (a-t)/60}')" \
    "$(awk -v a="$2" -v b="$3" 'BEGIN{print (b-a)/60}')" \
    "$5$([ "$4" = 0 ] || echo ", FAILED ($4)")")")
}

stage_kill_tree() {  # stage_kill_tree PID: PID and every process below it
  local child
  for child in $(pgrep -P "$1" || true); do stage_kill_tree "$child"; done
  kill "$1" 2>/dev/null || true
}

stage_table() {
  local rc=$? now
  now=$(date +%s)
  # A background stage still running when the run ends is stopped.
  local name
  for name in "${!STAGE_PID[@]}"; do stage_kill_tree "${STAGE_PID[$name]}"; done
  {
    printf '\n=== stage times (minutes; total %.1f, exit %s)\n' "$(awk -v a="$STAGE_T0" -v b="$now" 'BEGIN{print (b-a)/60}')" "$rc"
    # The work the run gave the machine: what the total would be with both
    # cores busy all the time, and how busy they were.
    local hz
    hz=$(getconf CLK_TCK)
    awk -v hz="$hz" -v c0="$STAGE_CPU0" -v c1="$(stage_cpu_ticks)" -v n="$(nproc)" 'BEGIN {
      split(c0, a, " "); split(c1, b, " ")
      busy = (b[1] - a[1]) / hz / 60; all = (b[2] - a[2]) / hz / 60
      printf "CPU: %.1f core-minutes busy of %.1f (%.0f%%; %d cores, so at least %.1f minutes)\n", busy, all, (all > 0 ? 100 * busy / all : 0), n, busy / n }'
    printf '| %-30s | %5s | %5s | %s |\n' stage start wall how
    printf '|%s|%s|%s|%s|\n' "--------------------------------" "-------" "-------" "-----"
    [ "${#STAGE_ROWS[@]}" -eq 0 ] || printf '%s\n' "${STAGE_ROWS[@]}"
  } | tee ${STAGE_TIMES:+"$STAGE_TIMES"}
  rm -rf "$STAGE_LOGS"
}
trap stage_table EXIT

stage_fg() {  # stage_fg NAME CMD...
  local name=$1 start rc
  shift
  step "$name"
  start=$(date +%s)
  set +e
  (set -e; "$@")
  rc=$?
  set -e
  stage_row "$name" "$start" "$(date +%s)" "$rc" foreground
  return "$rc"
}

stage_bg() {  # stage_bg NAME CMD...
  local name=$1
  shift
  local nice=${STAGE_NICE:-19}
  step "$name: started in the background (nice $nice)"
  (
    start=$(date +%s)
    [ "$nice" = 0 ] || renice -n "$nice" -p "$BASHPID" >/dev/null
    STAGE_NAME=$name
    set +e
    (set -e; "$@") >"$STAGE_LOGS/$name.log" 2>&1
    rc=$?
    echo "$start $(date +%s) $rc $nice" >"$STAGE_LOGS/$name.time"
    exit "$rc"
  ) &
  STAGE_PID[$name]=$!
}

stage_join() {  # stage_join NAME
  local name=$1 rc=0 start end
  wait "${STAGE_PID[$name]}" || rc=$?
  unset "STAGE_PID[$name]"
  step "$name: joined; its output:"
  cat "$STAGE_LOGS/$name.log"
  local nice
  read -r start end _ nice <"$STAGE_LOGS/$name.time"
  stage_row "$name" "$start" "$end" "$rc" "beside the foreground, nice $nice"
  local sub sstart send src
  if [ -f "$STAGE_LOGS/$name.sub" ]; then
    while IFS='|' read -r sub sstart send src; do
      stage_row "- $sub" "$sstart" "$send" "$src" "part of $name"
    done <"$STAGE_LOGS/$name.sub"
  fi
  return "$rc"
}

substage() {  # substage NAME CMD... (in a stage_bg command)
  local name=$1 start rc
  shift
  start=$(date +%s)
  step "$name"
  set +e
  (set -e; "$@")
  rc=$?
  set -e
  echo "$name|$start|$(date +%s)|$rc" >>"$STAGE_LOGS/${STAGE_NAME:-stage}.sub"
  return "$rc"
}
