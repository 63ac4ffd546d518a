#!/usr/bin/env bash
# Fault matrix: node1's wall clock stepped (date -s) during a
# provisional apply's confirm window. lossless-prio3 (PFC 3) is in force;
# `rocectl apply --confirm-timeout 12s` of the prio-4 config (PFC 4) is
# never confirmed. Required: the rollback to lossless-prio3 happens when the
# window has passed on the monotonic clock (/proc/uptime), whatever the wall
# clock does:
#  1. stepped an hour forward just after the apply: not early (no rollback
#     before 12 s, though link events make the reconcile loop run passes the
#     whole time, each of which checks the deadline);
#  2. stepped an hour back: not an hour late (rolled back by 12 s + 5 s);
#  3. no step, but the agent restarted inside the window: the
#     provisional config still rolls back, by itself, around its deadline.
# After each rollback: status says CONFIRM_TIMEOUT with no deadline, and the
# node (dcb -j, sysfs, configfs) equals lossless-prio3 again.
# The agent's deadlines are on the wall clock today, so parts 1 and 2 FAIL
# until they are monotonic; every part runs anyway and the test fails at
# the end listing what did not hold.
# Everything runs in the guest over the agent's unix socket (rocectl as
# root): the host's mTLS certificates have notBefore = lab-up time, not yet
# valid on a clock an hour back. The guest clock is put back from the RTC
# (hwclock --hctosys) on exit.
source "$(dirname "$0")/reconcile_lib.sh"
rec_on_cleanup 'lx node1 hwclock --hctosys'
rec_on_cleanup 'lx node1 ip link set eth0 promisc off'
rec_on_cleanup 'lx node1 rm -rf /tmp/fault-clock'
rec_reset
G=/tmp/fault-clock
# 12 s: long enough to tell a rollback at the deadline from one at the
# first pass after the step (an hour early), short enough for three windows.
WINDOW=12

push() { "$LAB" exec -i "$REC_NODE" -- sh -c "mkdir -p $G && cat > $G/$2" <"$1"; }
push "$LOSSLESS" a.yaml
push "$PRIO4" b.yaml
cat >"$REC_TMP/window.sh" <<'EOF'
#!/bin/bash
# window.sh STEP CONFIRM MAXWAIT: provisional apply of b.yaml with
# --confirm-timeout CONFIRM; steps the wall clock by STEP (a date -s
# relative time, or "none") and back after; link events (promisc on/off)
# about every second so the reconcile loop keeps running passes; polls the
# PFC until the rollback to a.yaml (PFC on priority 3 only) or MAXWAIT s.
# Prints monotonic times (/proc/uptime): t0, applied, rolled_back or
# not_rolled_back.
set -u
up() { local u _; read -r u _ </proc/uptime; echo "$u"; }
t0=$(up)
echo "t0 $t0"
"$ROCECTL" --socket /run/roced/roced.sock --timeout 30s apply --confirm-timeout "$2" -f /tmp/fault-clock/b.yaml \
  >/tmp/fault-clock/apply.out 2>&1 || { echo "apply_failed"; cat /tmp/fault-clock/apply.out; exit 1; }
echo "applied $(up)"
[ "$1" = none ] || { date -s "$1" >/dev/null; echo "stepped $(up) $(date -u +%FT%T)"; }
while :; do
  now=$(up)
  if ((${now%.*} - ${t0%.*} > $3)); then echo "not_rolled_back $now"; break; fi
  case $(dcb -j pfc show dev eth0) in
    *'"prio_pfc":[false,false,false,true,false,false,false,false]'*) echo "rolled_back $(up)"; break ;;
  esac
  ip link set eth0 promisc on
  ip link set eth0 promisc off
  sleep 0.3
done
case $1 in none) ;; +*) date -s "-${1#+}" >/dev/null ;; -*) date -s "+${1#-}" >/dev/null ;; esac
EOF
push "$REC_TMP/window.sh" window.sh

sock() { RSOCK_TIMEOUT=30s rsock "$REC_NODE" "$@"; }
sock apply -f "$G/a.yaml" >/dev/null || fail "apply of lossless-prio3 over the unix socket failed"
state_a=$(rec_snapshot)
problems=()

# window STEP CONFIRM_S MAXWAIT WHAT [AGENT_RESTART]: runs window.sh (the
# restart, if asked, from the host while it polls); checks the rollback
# came no earlier than CONFIRM_S after t0 and no later than CONFIRM_S + 5
# after the apply returned; then the status and the node.
window() {
  local step=$1 confirm=$2 maxwait=$3 what=$4 restart=${5:-} out t0 applied rolled st
  # Emptied here, not by the background job's own redirection: that runs
  # in the forked shell, maybe after the poll below has read the last
  # window's "applied" and restarted the agent under this window's apply
  # ("apply_failed ... roced.sock: No such file").
  : >"$REC_TMP/window.out"
  "$LAB" exec -t 120 "$REC_NODE" -- env ROCECTL="$ROCECTL_BIN" bash "$G/window.sh" "$step" "${confirm}s" "$maxwait" \
    >"$REC_TMP/window.out" 2>&1 &
  local w=$!
  if [[ -n $restart ]]; then
    # The restart must come after the apply returned: restarted into it,
    # the apply finds no agent (seen under load, when the guest took more
    # than the 10 s this waited once). Up to 60 s, then fail saying so.
    local deadline=$((SECONDS + 60))
    until grep -q '^applied\|^apply_failed' "$REC_TMP/window.out"; do
      ((SECONDS < deadline)) || fail "$what: the provisional apply had not returned after 60 s: $(cat "$REC_TMP/window.out")"
      sleep 0.25
    done
    grep -q '^applied' "$REC_TMP/window.out" || fail "$what: the provisional apply failed: $(cat "$REC_TMP/window.out")"
    "$LAB" agent restart "$REC_NODE" >/dev/null 2>&1 || fail "$what: agent restart failed"
    log "$what: agent restarted inside the window"
  fi
  wait "$w" || fail "$what: window.sh failed: $(cat "$REC_TMP/window.out")"
  out=$(cat "$REC_TMP/window.out")
  grep -q '^applied' <<<"$out" || fail "$what: the provisional apply failed: $out"
  t0=$(awk '/^t0/ {print $2}' <<<"$out")
  applied=$(awk '/^applied/ {print $2}' <<<"$out")
  if grep -q '^not_rolled_back' <<<"$out"; then
    problems+=("$what: not rolled back ${maxwait} s after the apply (window ${confirm} s, monotonic)")
    log "$what: NOT rolled back within ${maxwait} s; putting lossless-prio3 back by hand"
    sock apply -f "$G/a.yaml" >/dev/null || fail "$what: could not apply lossless-prio3 again"
    return
  fi
  rolled=$(awk '/^rolled_back/ {print $2}' <<<"$out")
  local after_t0 after_applied
  after_t0=$(awk -v a="$rolled" -v b="$t0" 'BEGIN{printf "%.2f", a-b}')
  after_applied=$(awk -v a="$rolled" -v b="$applied" 'BEGIN{printf "%.2f", a-b}')
  log "$what: rolled back ${after_t0} s after the apply started (${after_applied} s after it returned; window ${confirm} s)"
  if awk -v t="$after_t0" -v c="$confirm" 'BEGIN{exit !(t < c - 0.1)}'; then
    problems+=("$what: rolled back EARLY, ${after_t0} s into a ${confirm} s window")
  elif awk -v t="$after_applied" -v c="$confirm" 'BEGIN{exit !(t > c + 5)}'; then
    problems+=("$what: rolled back LATE, ${after_applied} s after a ${confirm} s window began")
  fi
  st=$(sock -o json status) || fail "$what: status over the unix socket failed"
  expect_eq "$what: config source after the rollback" CONFIG_SOURCE_CONFIRM_TIMEOUT "$(json_get "$st" "j['config']['source']")"
  expect_eq "$what: confirm deadline after the rollback" False "$(json_get "$st" "'confirmDeadline' in j['config']")"
  rec_wait_state "$state_a" 10 "$what: node after the rollback" >/dev/null
}

window "+1 hour" "$WINDOW" 30 "clock an hour forward"
window "-1 hour" "$WINDOW" 30 "clock an hour back"
window none "$WINDOW" 40 "agent restarted" restart
((${#problems[@]} == 0)) || fail "the rollback did not follow the monotonic clock:
$(printf '  %s\n' "${problems[@]}")"
pass "rollbacks on the monotonic clock: not early with the clock an hour ahead, not late with it an hour back, and after an agent restart"
