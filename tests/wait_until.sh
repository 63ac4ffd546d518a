# wait_until SECS CMD...: runs CMD until it succeeds (status 0) or SECS have
# passed (status 1), polling every WAIT_UNTIL_POLL seconds (0.25): a wait on
# a condition with a deadline, never a fixed sleep. Sourced by the e2e and
# lab test helpers (tests/e2e/lib.sh, tests/lab/tests/lib.sh).
# shellcheck shell=bash
wait_until() {
  local deadline=$((SECONDS + $1))
  shift
  until "$@"; do
    ((SECONDS < deadline)) || return 1
    sleep "${WAIT_UNTIL_POLL:-0.25}"
  done
}
