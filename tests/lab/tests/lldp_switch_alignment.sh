#!/usr/bin/env bash
# Host against switch over LLDP. node1 runs lossless-prio3.yaml (DSCP 26 ->
# priority 3, PFC on 3); a switch stand-in (tests/lab/lib/lldp_switch.py) in
# the lab namespace sends LLDPDUs on node1's tap:
#  1. PFC on 4 (IEEE TLVs): `rocectl diagnose` reports the switch_alignment
#     error naming both sides and exits 1, rocectl status shows the switch,
#     and /metrics has roced_switch_pfc_enabled{netdev="eth0",priority="4"} 1;
#  2. PFC on 3 and APP 26->3: no switch_alignment error, exit 0;
#  3. the same as CEE (DCBX 1.01) TLVs: decoded, marked as CEE, aligned;
#  4. the switch goes quiet: the neighbour is gone after its TTL (metrics
#     too), and diagnose notes that no LLDP is heard.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

TAP=tap-node1  # the lab names node N's tap tap-nodeN (tests/lab/lib/common.sh)
SWITCH_PID=
stop_switch() {
  if [[ -n $SWITCH_PID ]]; then kill "$SWITCH_PID" 2>/dev/null || true; wait "$SWITCH_PID" 2>/dev/null || true; fi
  SWITCH_PID=
}
# start_switch ARGS...: the stand-in on node1's tap, one frame a second.
start_switch() {
  stop_switch
  ip netns exec "$REC_NS" "$PY" "$TESTS_DIR/../lib/lldp_switch.py" --tap "$TAP" --system-name lab-tor1 \
    --port Ethernet7 --interval 1 "$@" 2>>"$REC_TMP/switch.log" &
  SWITCH_PID=$!
}
rec_on_cleanup stop_switch

# The neighbour of eth0 in GetState as JSON ("" when none).
neighbor() {
  json_get "$(rec_status)" "next((json.dumps(n) for n in j.get('lldpNeighbors', []) if n['netdev'] == 'eth0'), '')"
}
# wait_neighbor PYEXPR SECONDS: until the neighbour (n, a dict) satisfies it.
wait_neighbor() {
  local deadline=$((SECONDS + $2)) n
  while ((SECONDS < deadline)); do
    n=$(neighbor)
    if [[ -n $n ]] && "$PY" -c "import json,sys; n=json.loads(sys.argv[1]); sys.exit(0 if ($1) else 1)" "$n"; then
      return 0
    fi
    sleep 0.5
  done
  fail "eth0's LLDP neighbour never satisfied '$1' within $2 s; last: ${n:-none}; switch log: $(cat "$REC_TMP/switch.log")"
}
# diag: switch_alignment findings as JSON; sets DIAG_RC.
diag() {
  DIAG_RC=0
  DIAG=$(rctl -o json diagnose --checks switch_alignment) || DIAG_RC=$?
}

rctl apply -f "$LOSSLESS" >/dev/null || fail "apply of lossless-prio3.yaml failed"
rec_wait_converged 30 "lossless-prio3 before the switch speaks" >/dev/null

log "1. a switch with PFC on priority 4"
t0=$(date +%s.%N)
start_switch --pfc 4 --app 26:3 --max-frame 9216 --ttl 6
wait_neighbor "n.get('systemName') == 'lab-tor1' and n['pfc'].get('enabled') == 16" 20
log "heard in $(elapsed "$t0") s"
diag
((DIAG_RC == 1)) || fail "diagnose exited $DIAG_RC with the switch on PFC 4, want 1: $DIAG"
"$PY" - "$DIAG" <<'PY' || fail "the switch_alignment findings are not the expected ones (above)"
import json, sys
f = json.loads(sys.argv[1]).get("findings", [])
for x in f:
    print(f"  {x['severity']} {x['check']} {x['object']}: {x['summary']} | {x.get('detail', '')}")
err = [x for x in f if x["severity"] == "SEVERITY_ERROR"]
assert len(err) == 1 and err[0]["object"] == "eth0", err
assert "lossless on the host but not on the switch lab-tor1 port Ethernet7" in err[0]["summary"], err
assert "host PFC [3], switch PFC [4]" in err[0]["detail"], err
PY
table=$(rctl status) || fail "rocectl status failed"
grep -Eq "^eth0 +lab-tor1 +Ethernet7 +\[4\] +26->3 +9216 +ieee" <<<"$table" ||
  fail "rocectl status does not show the switch:
$table"
expect_eq 'roced_switch_pfc_enabled{netdev="eth0",priority="4"}' 1 \
  "$(rec_metric 'roced_switch_pfc_enabled{netdev="eth0",priority="4"}')"
expect_eq 'roced_switch_pfc_enabled{netdev="eth0",priority="3"}' 0 \
  "$(rec_metric 'roced_switch_pfc_enabled{netdev="eth0",priority="3"}')"
expect_eq 'roced_switch_app_priority{netdev="eth0",selector="dscp",protocol="26"}' 3 \
  "$(rec_metric 'roced_switch_app_priority{netdev="eth0",selector="dscp",protocol="26"}')"

log "2. the switch moves to PFC on 3 with APP 26->3"
start_switch --pfc 3 --app 26:3 --max-frame 9216 --ttl 6
wait_neighbor "n['pfc'].get('enabled') == 8" 20
diag
((DIAG_RC == 0)) || fail "diagnose exited $DIAG_RC with both sides aligned, want 0: $DIAG"
expect_eq "switch_alignment findings when aligned" 0 "$(json_get "$DIAG" "len(j.get('findings', []))")"
expect_eq 'roced_switch_pfc_enabled{netdev="eth0",priority="4"}' 0 \
  "$(rec_metric 'roced_switch_pfc_enabled{netdev="eth0",priority="4"}')"

log "3. the same switch speaking CEE (DCBX 1.01)"
start_switch --cee --pfc 3 --ets-prio-tc 0,0,0,1,0,0,0,0 --app-ethertype 0x8906:3 --ttl 6
wait_neighbor "n['pfc'].get('source') == 'DCB_SOURCE_LLDP_CEE' and n['ets'].get('priorityToTc', [0]*8)[3] == 1" 20
diag
((DIAG_RC == 0)) || fail "diagnose exited $DIAG_RC with a CEE switch on PFC 3, want 0: $DIAG"

log "4. the switch goes quiet: gone after its 6 s TTL"
stop_switch
t0=$(date +%s.%N)
deadline=$((SECONDS + 20))
while [[ -n $(neighbor) ]]; do
  ((SECONDS < deadline)) || fail "the LLDP neighbour is still listed 20 s after the switch stopped: $(neighbor)"
  sleep 0.5
done
log "gone $(elapsed "$t0") s after the last frame stopped"
if rec_metric 'roced_switch_pfc_enabled{netdev="eth0",priority="3"}' >/dev/null 2>&1; then
  fail "roced_switch_pfc_enabled is still on /metrics after the neighbour expired"
fi
diag
expect_eq "diagnose's note once nothing is heard" "no LLDP heard from the switch" \
  "$(json_get "$DIAG" "j['findings'][0]['summary']")"
pass "PFC 4 on the switch: switch_alignment error (host [3], switch [4]), exit 1, metric 1; PFC 3 + APP 26->3 (IEEE and CEE): clear; neighbour gone after its TTL"
