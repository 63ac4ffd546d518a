#!/usr/bin/env bash
# kill -9 of roced in the middle of an apply, then a restart: the node ends
# in the accepted state, exactly as it was before the apply.
#  1. Generation A (lossless-prio3) is in force; an apply of B (same fields,
#     other values) is interrupted right after its first DSCP SET reaches
#     the driver, leaving a mix of A and B; the restarted agent resumes A
#     from <state-dir>/accepted.json and puts every field back.
#  2. A config that manages nothing is in force; an apply of lossless-prio3
#     is interrupted the same way: the restarted agent writes back what the
#     apply had changed from <state-dir>/apply-journal.json, though the
#     accepted config does not manage those fields.
source "$(dirname "$0")/reconcile_lib.sh"

# interrupted_apply FROM TO CHECK: FROM in force, TO's apply killed after
# its first DSCP SET; CHECK (python on the snapshot j) says the node is
# mid-apply. Then restarts the agent and waits for FROM's state.
interrupted_apply() {
local from=$1 to=$2 check=$3
rec_reset
rctl apply -f "$from" >/dev/null || fail "apply of $(basename "$from") failed"
gen=$(rec_generation)
state_a=$(rec_snapshot)

mixed=""
for attempt in 1 2 3; do
  lsh "$REC_NODE" "echo 0 > $DCBT/calls; rm -f /tmp/kill9.ready"
  # In the guest: wait for the first app-table SET of the apply, then SIGKILL
  # (bash builtins only: no fork between seeing it and the kill).
  "$LAB" exec -t 60 "$REC_NODE" -- bash -c "
    pid=\$(pgrep -x roced) || { echo 'no roced'; exit 1; }
    : > /tmp/kill9.ready
    while :; do
      { read -r _; read -r _; read -r app; } < $DCBT/calls
      [[ \$app != 'setapp 0' ]] && break
    done
    kill -9 \$pid && echo killed" >"$REC_TMP/watch.out" 2>&1 &
  watcher=$!
  wait_guest_file "$REC_NODE" /tmp/kill9.ready 30 "the kill watcher"
  rc=0
  out=$(rctl apply -f "$to" 2>&1) || rc=$?
  wait "$watcher" || fail "kill watcher failed: $(cat "$REC_TMP/watch.out")"
  grep -q killed "$REC_TMP/watch.out" || fail "roced was not killed: $(cat "$REC_TMP/watch.out")"
  mid=$(rec_snapshot)
  if [[ $(snap_get "$mid" "$check") == True ]]; then
    mixed=$mid
    break
  fi
  log "attempt $attempt: the kill did not land mid-apply (rocectl rc $rc); again"
  "$LAB" agent start "$REC_NODE" >/dev/null || fail "agent restart failed"
  rctl apply -f "$from" >/dev/null || fail "re-apply of $(basename "$from") failed"
done
[[ -n $mixed ]] || fail "could not interrupt an apply half-way in 3 attempts"
((rc != 0)) || fail "rocectl apply reported success although the agent died under it: $out"
log "node after the kill: PFC $(snap_get "$mixed" "j['pfc']['prio_pfc']"), app $(snap_get "$mixed" "j['app']")"

"$LAB" agent start "$REC_NODE" >/dev/null || fail "agent restart failed"
deadline=$((SECONDS + 30))
while :; do
  now=$(rec_snapshot)
  [[ $now == "$state_a" ]] && break
  ((SECONDS < deadline)) || expect_same_state "30 s after the restart" "$state_a" "$now"
  sleep 0.5
done
st=$(rec_status)
expect_eq "accepted generation after the restart" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
expect_eq "converged after the restart" True "$(json_get "$st" "j['config'].get('converged', False)")"
lx "$REC_NODE" test ! -e /var/lib/roced/apply-journal.json || fail "the apply journal is still there after the restore"
}

# Mid-apply = something of B is there (DSCP 34) but not all of B (PFC 4).
interrupted_apply "$LOSSLESS" "$PRIO4" "[34, 4] in j['app'].get('dscp_prio', []) and not j['pfc']['prio_pfc'][4]"
log "same fields: generation $gen restored exactly"
# Mid-apply = DSCP 26 is there but PFC 3 is not yet on.
interrupted_apply "$NEUTRAL" "$LOSSLESS" "[26, 3] in j['app'].get('dscp_prio', []) and not j['pfc']['prio_pfc'][3]"
pass "interrupted after DSCP: the restarted agent restored the accepted state, also for fields only the interrupted apply managed"
