#!/usr/bin/env bash
# The PFC storm watchdog against the DCB test NIC: a storm of received pause
# frames on priority 3 sets roced_pfc_storm{netdev="eth0",priority="3"} to
# 1 within 500 ms, and it returns to 0 after the storm stops (restoration
# time, 400 ms by default). Times are taken in the guest, on one clock: the
# storm starts and stops from a bash builtin that records $EPOCHREALTIME
# just before, and the agent's log line for each transition (the same
# moment the gauge changes) carries its time. The gauge is read from the
# host over HTTP; roced_pfc_storm_events_total counts the storm.
source "$(dirname "$0")/lib.sh"
require_lab
NS=$("$LAB" netns)
A1=$("$LAB" addr node1)
C=/sys/class/net/eth0/dcbtest

lx node1 pgrep -x roced >/dev/null || fail "roced is not running on node1"
gauge() {  # gauge NAME: the eth0 priority-3 sample of NAME, or "absent"
  ip netns exec "$NS" "$PY" -c 'import re, sys, urllib.request
t = urllib.request.urlopen(f"http://{sys.argv[1]}:9471/metrics", timeout=20).read().decode()
m = re.search(r"^" + sys.argv[2] + r"\{netdev=\"eth0\",priority=\"3\"\} (\S+)$", t, re.M)
print(m.group(1) if m else "absent")' "$A1" "$1"
}
wait_gauge() {  # wait_gauge WANT SECONDS
  local deadline=$((SECONDS + $2)) v
  while :; do
    v=$(gauge roced_pfc_storm) || fail "GET /metrics on node1 failed"
    [[ $v == "$1" ]] && return 0
    ((SECONDS < deadline)) || fail "roced_pfc_storm{netdev=\"eth0\",priority=\"3\"} is $v, not $1, after $2 s"
    sleep 0.2
  done
}
# log_time PATTERN: epoch seconds of the first agent log line after the mark
# that contains PATTERN.
log_time() {
  local line
  line=$(lsh node1 "tail -n +$((mark + 1)) /lab/roced.log | grep -m1 -F '$1'") || fail "no log line with '$1' on node1"
  log "agent: $line" >&2
  "$PY" -c 'import sys; from datetime import datetime
print(datetime.fromisoformat(sys.argv[1].split()[0].replace("Z", "+00:00")).timestamp())' "$line"
}

lsh node1 "echo off > $C/storm; echo 1 > $C/reset" || fail "could not reset the test NIC"
trap 'lsh node1 "echo off > $C/storm" >/dev/null 2>&1 || true' EXIT
wait_gauge 0 10
events0=$(gauge roced_pfc_storm_events_total)
mark=$(lsh node1 "wc -l < /lab/roced.log") || fail "cannot read /lab/roced.log on node1"

t0=$(lx node1 bash -c "t=\$EPOCHREALTIME; echo '3 1000 rx' > $C/storm && echo \$t") || fail "could not start the storm"
wait_gauge 1 10
t_storm=$(log_time "PFC storm on eth0 priority 3:")
detect=$("$PY" -c "print(f'{$t_storm - $t0:.3f}')")
log "storm on priority 3 detected ${detect} s after it started"
"$PY" -c "import sys; sys.exit(0 if $detect <= 0.5 else 1)" || fail "storm detected after ${detect} s (limit 0.5 s)"
events1=$(gauge roced_pfc_storm_events_total)
"$PY" -c "import sys; sys.exit(0 if float('$events1') == float('$events0') + 1 else 1)" ||
  fail "roced_pfc_storm_events_total went $events0 -> $events1 for one storm"
sleep 1
expect_eq "storm gauge while the storm goes on" 1 "$(gauge roced_pfc_storm)"

t1=$(lx node1 bash -c "t=\$EPOCHREALTIME; echo off > $C/storm && echo \$t") || fail "could not stop the storm"
wait_gauge 0 10
t_over=$(log_time "PFC storm on eth0 priority 3 over")
restore=$("$PY" -c "print(f'{$t_over - $t1:.3f}')")
# The watchdog times the quiet spell from the last poll that saw pause
# frames, which can precede the stop by up to a poll (100 ms) plus the test
# NIC's 100 ms storm tick; the spell itself, as the agent logs it, must be at least
# the 400 ms restoration time.
quiet=$(grep -o 'no pause frames for [0-9.]*ms' <<<"$(lsh node1 "tail -n +$((mark + 1)) /lab/roced.log")" | head -1 | grep -o '[0-9.]*')
"$PY" -c "import sys; sys.exit(0 if float('${quiet:-0}') >= 400 else 1)" ||
  fail "the agent cleared the storm after a quiet spell of ${quiet:-?} ms, less than the 400 ms restoration time"
"$PY" -c "import sys; sys.exit(0 if 0.15 <= $restore <= 2.0 else 1)" ||
  fail "storm cleared ${restore} s after it stopped (expected the 0.4 s restoration time, less up to a poll, plus a poll)"
pass "roced_pfc_storm 0 -> 1 in ${detect} s (limit 0.5 s), back to 0 ${restore} s after the storm stopped (quiet spell ${quiet} ms >= restoration 400 ms)"
