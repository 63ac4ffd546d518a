#!/usr/bin/env bash
# ctest fixture setup: brings up the shared three-node lab the other lab tests
# use. Starts roced in each node when the agent binaries exist (ROCED_BIN,
# ROCECTL_BIN), else boots without the agent and says so.
source "$(dirname "$0")/lib.sh"

why=$(lab_preflight_reason)
[[ -z $why ]] || skip "$why"

# A lab left over from an interrupted run would make `up` refuse.
"$LAB" down >/dev/null 2>&1 || true

args=(--nodes "${LAB_TEST_NODES:-3}" --ttl "${LAB_TEST_TTL:-1800}")
if [[ -x ${ROCED_BIN:-} && -x ${ROCECTL_BIN:-} ]]; then
  log "agent binaries: $ROCED_BIN, $ROCECTL_BIN"
else
  log "NOTE: agent binaries not built (${ROCED_BIN:-roced}); booting without the agent, agent tests will skip"
  args+=(--no-agent)
fi
start=$(date +%s.%N)
"$LAB" up "${args[@]}" || fail "lab up failed"
log "lab up took $(awk -v a="$start" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}') s"
pass
