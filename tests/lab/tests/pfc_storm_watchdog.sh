#!/usr/bin/env bash
# The PFC storm watchdog against the DCB test NIC judges a storm as a queue
# that makes no progress while paused, not as pausing alone:
#   1. congestion that drains: received pause frames on priority 3 at
#      2800/s (rx_prio3_pause_duration: 94% of the time paused, every poll
#      paused) while tx_prio3_packets keeps rising (`storm 3 2800 rx drain`)
#      for 3 s: roced_pfc_storm{netdev="eth0",priority="3"} stays 0 and
#      roced_pfc_storm_events_total does not move;
#   2. the same pausing turned stuck (`storm 3 2800 rx stuck`: the NIC keeps
#      its tick, so the pausing goes on without a gap, and tx_prio3_packets
#      stops): the gauge reads 1 within 500 ms of that write;
#   3. `storm off`: it returns to 0 only after the restoration time (400 ms
#      by default) without pause frames; events_total counts one storm.
# Run time as before plus the 3 s of congestion (which also wakes the
# watchdog from its 1 s idle reads to its 100 ms polls, so step 2 is judged
# at the poll interval).
#
# Judged from outside the agent: pfc_storm_observe.py runs in node1 and, on
# the guest clock, every ~10 ms reads the NIC's pause and tx_prio3_packets
# counters (the ETHTOOL_GSTATS ioctl: what `ethtool -S` prints) and scrapes
# the agent's /metrics. It runs the congestion, turns it stuck, stops it
# ~1 s after the gauge reads 1, and reports when the gauge flipped (between
# the request of the last scrape with the old value and the response of the
# first with the new one) and when the counters last increased (between the
# last read below their final value and the first at it). The checks:
#   - congestion: every scrape during it read 0, events_total unchanged,
#     while the NIC counted pause frames and tx_prio3_packets rose;
#   - detection: the first scrape reading 1 was answered <= 0.5 s after the
#     write that made the queue stuck (an upper bound on the flip): the
#     detection time (0.2 s) after the last transmit progress the agent read
#     (<= a 0.1 s poll after the write), plus the 0.2 s this test always
#     allowed for the agent's poll lateness and the scrape under emulation;
#     and tx_prio3_packets stayed flat while stuck;
#   - restoration: the longest quiet spell the observations allow (flip's
#     upper bound less the last increase's lower bound) is >= 0.4 s (the
#     gauge did not clear early), and the shortest is <= 1.5 s (it did clear,
#     within two agent polls plus emulation slack);
#   - the gauge holds 1 during the storm and 0 after, events_total +1.
# The agent's own log lines for both transitions are checked too, as before
# (their times against the same writes, the quiet spell they state; no storm
# line before the stuck write).
# Last, PFC turned off on priority 3 ends its watch: the series go.
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
wait_gauge() {  # wait_gauge WANT SECONDS: sets waited (s, to 0.1)
  local deadline=$((SECONDS + $2)) v t0
  t0=$(date +%s.%N)
  while :; do
    v=$(gauge roced_pfc_storm) || fail "GET /metrics on node1 failed"
    [[ $v == "$1" ]] && { waited=$(awk -v a="$t0" -v b="$(date +%s.%N)" 'BEGIN{printf "%.1f", b-a}'); return 0; }
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
# obs EXPR: EXPR evaluated with the observer's JSON bound to j.
obs() { json_get "$o" "$1"; }
check() { # check PYTHON-CONDITION MESSAGE: condition on the observer's JSON j
  "$PY" -c 'import json,sys; j=json.loads(sys.argv[1]); sys.exit(0 if eval(sys.argv[2]) else 1)' "$o" "$1" ||
    fail "$2"
}

# The watchdog polls only priorities with PFC on (DCB netlink), so PFC goes
# on for priority 3 first; the gauge appears once the agent has taken it
# up (the DCB netlink event wakes its counter refresh).
lsh node1 "echo off > $C/storm; echo 1 > $C/reset; dcb pfc set dev eth0 prio-pfc all:off 3:on" ||
  fail "could not reset the test NIC and enable PFC on priority 3"
trap 'lsh node1 "echo off > $C/storm; dcb pfc set dev eth0 prio-pfc all:off" >/dev/null 2>&1 || true' EXIT
wait_gauge 0 5
log "PFC on priority 3: its storm gauge on /metrics after ${waited} s"
events0=$(gauge roced_pfc_storm_events_total)
mark=$(lsh node1 "wc -l < /lab/roced.log") || fail "cannot read /lab/roced.log on node1"

rc=0
o=$(lx node1 python3 "$TESTS_DIR/pfc_storm_observe.py" --netdev eth0 --prio 3 --storm "2800 rx" \
  --drain 3 --metrics "http://$A1:9471/metrics" --hold 1 --after 0.5) || rc=$?
[[ $o == "{"* ]] || fail "pfc_storm_observe.py in node1 failed (exit $rc): $o"
((rc == 0)) || fail "observer: $(obs "j['why']") ($o)"
t0=$(obs "j['t_start']")
t1=$(obs "j['t_stop']")
log "observer: congestion for $(obs "round(j['drain_seconds'], 2)") s: $(obs "j['drain_pauses']") pause frames, $(obs "j['drain_tx_packets']") packets sent on priority 3, gauge read $(obs "j['drain_gauges']")"
log "observer: $(obs "j['samples']") samples, scrape period median $(obs "round(j['scrape_period_median'] * 1000)") ms (max $(obs "round(j['scrape_period_max'] * 1000)") ms), scrape at most $(obs "round(j['scrape_duration_max'] * 1000)") ms"
log "observer: first pause frames counted $(obs "round(j['first_counted_after'], 3)") s after the stuck write; gauge 0 -> 1 between $(obs "round(j['set_after_lo'], 3)") and $(obs "round(j['set_after_hi'], 3)") s after it"
log "observer: last pause counter increase $(obs "round(j['last_increase_after_stop_lo'], 3)")..$(obs "round(j['last_increase_after_stop_hi'], 3)") s after the stop write; gauge 1 -> 0 $(obs "round(j['clear_after_stop_lo'], 3)")..$(obs "round(j['clear_after_stop_hi'], 3)") s after it; quiet spell $(obs "round(j['quiet_min'], 3)")..$(obs "round(j['quiet_max'], 3)") s"

check "j['drain_pauses'] > 0 and j['drain_tx_packets'] > 0" \
  "the congestion did not both pause and send: $(obs "j['drain_pauses']") pause frames, $(obs "j['drain_tx_packets']") packets"
check "j['drain_gauges'] == [0.0]" "draining congestion (pauses in every poll, tx_prio3_packets rising) was judged a storm: the gauge read $(obs "j['drain_gauges']") during it"
check "j['drain_events'] == float('$events0')" "roced_pfc_storm_events_total went $events0 -> $(obs "j['drain_events']") during draining congestion"
check "j['counted_during_storm'] > 0" "the pause counters did not climb during the storm"
check "j['stuck_tx_packets'] == 0" "tx_prio3_packets rose by $(obs "j['stuck_tx_packets']") while the queue was stuck"
check "j['set_after_hi'] <= 0.5" "storm seen on /metrics $(obs "round(j['set_after_hi'], 3)") s after the queue got stuck (limit 0.5 s; the flip was after $(obs "round(j['set_after_lo'], 3)") s)"
check "j['gauge_during_hold'] == [1.0]" "the storm gauge did not hold 1 while the storm went on: $(obs "j['gauge_during_hold']")"
check "j['quiet_max'] >= 0.4" "the gauge cleared after at most $(obs "round(j['quiet_max'], 3)") s without pause frames, less than the 0.4 s restoration time"
check "j['quiet_min'] <= 1.5" "the gauge cleared only $(obs "round(j['quiet_min'], 3)") s after the last pause frame (restoration 0.4 s)"
check "j['gauge_after_clear'] == [0.0]" "the storm gauge did not stay 0 after it cleared: $(obs "j['gauge_after_clear']")"
check "j['events_during'] == float('$events0') + 1 and j['events_after'] == j['events_during']" \
  "roced_pfc_storm_events_total went $events0 -> $(obs "j['events_during']") -> $(obs "j['events_after']") for one storm"
expect_eq "storm gauge after the run" 0 "$(gauge roced_pfc_storm)"

# The agent's log, as before: the first storm line since the mark comes
# after the stuck write (none during the congestion) and within 0.5 s of it,
# the over line 0.15-2 s after the stop, stating a quiet spell >= 400 ms.
t_storm=$(log_time "PFC storm on eth0 priority 3:")
detect=$("$PY" -c "print(f'{$t_storm - $t0:.3f}')")
log "agent log: storm on priority 3 detected ${detect} s after the queue got stuck"
"$PY" -c "import sys; sys.exit(0 if $detect >= 0 else 1)" ||
  fail "the agent logged a storm ${detect} s before the queue got stuck: during draining congestion"
"$PY" -c "import sys; sys.exit(0 if $detect <= 0.5 else 1)" || fail "storm detected after ${detect} s (limit 0.5 s)"
t_over=$(log_time "PFC storm on eth0 priority 3 over")
restore=$("$PY" -c "print(f'{$t_over - $t1:.3f}')")
quiet=$(grep -o 'no pause frames for [0-9.]*ms' <<<"$(lsh node1 "tail -n +$((mark + 1)) /lab/roced.log")" | head -1 | grep -o '[0-9.]*')
"$PY" -c "import sys; sys.exit(0 if float('${quiet:-0}') >= 400 else 1)" ||
  fail "the agent cleared the storm after a quiet spell of ${quiet:-?} ms, less than the 400 ms restoration time"
"$PY" -c "import sys; sys.exit(0 if 0.15 <= $restore <= 2.0 else 1)" ||
  fail "storm cleared ${restore} s after it stopped (expected the 0.4 s restoration time, less up to a poll, plus a poll)"
# PFC off on priority 3: nothing there can storm, the watchdog stops
# watching it and its series go (the DCB event wakes the counter refresh;
# 5 s, half the refresh's backstop: without the event this fails as often
# as not).
lsh node1 "dcb pfc set dev eth0 prio-pfc all:off" || fail "could not turn PFC off"
wait_gauge absent 5
log "PFC off: the series gone after ${waited} s"
pass "draining congestion at 2800 pauses/s for $(obs "round(j['drain_seconds'], 1)") s not a storm; roced_pfc_storm 0 -> 1 seen on /metrics $(obs "round(j['set_after_hi'], 3)") s after the queue got stuck (limit 0.5 s); back to 0 after $(obs "round(j['quiet_min'], 3)")..$(obs "round(j['quiet_max'], 3)") s without pause frames (>= 0.4 s) by ethtool and /metrics; agent log: ${detect} s, quiet ${quiet} ms"
