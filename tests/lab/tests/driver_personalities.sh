#!/usr/bin/env bash
# The DCB and counter scenario under each driver the test NIC imitates
# (roce_dcbtest.ko driver=mlx5|bnxt_en|ice; docs/drivers.md), one run per
# driver with the same steps, the driver a parameter:
#  1. loaded with the NIC's own agent owning DCB (dcbx_mode=firmware: mlx5's
#     firmware DCBX, bnxt_en's LLD_MANAGED firmware agent, ice's
#     fw-lldp-agent flag on), lossless-prio3.yaml: roced writes no DCB field
#     (0 setets/setpfc/setapp), status names the driver, its agent and its
#     fix, diagnose's dcbx_mode gives that fix, roced_dcb_firmware_agent is 1;
#  2. the operator's fix for that driver (mlx5: qos.dcbx_mode host in the
#     config; bnxt_en: NVM, i.e. a reload in host mode; ice: ethtool
#     --set-priv-flags eth0 fw-lldp-agent off), then lossless-prio3.yaml
#     converges and re-plans empty; the NIC's own DSCP table maps 26 to 3,
#     what the driver cannot do is reported not manageable (ECN enables on
#     bnxt_en and ice), ETS is translated onto ice's fixed priority map and
#     said;
#  3. pause frames on priority 3 move roced_pfc_pause_frames_received_total
#     with the driver's own statistic name in `stat`;
#  4. DSCP 26 remapped to priority 4 in one apply: the NIC's own DSCP table
#     follows (bnxt_en's firmware unmaps a DSCP on delete and ice refuses an
#     add for a mapped DSCP: roced deletes first there).
# ROCED_LAB_DRIVERS (default "mlx5 bnxt_en ice") picks the drivers.
source "$(dirname "$0")/reconcile_lib.sh"
KO=$(lx "$REC_NODE" sh -c '. /lab/node.env; echo $KCACHE/module/roce_dcbtest.ko')
reload() {  # reload PARAM=VALUE...: the test NIC again with these parameters
  lx "$REC_NODE" sh -c "rmmod roce_dcbtest 2>/dev/null; insmod $KO ifname=eth0 $*" || fail "insmod $* failed"
}
rec_on_cleanup "lx $REC_NODE sh -c 'rmmod roce_dcbtest; insmod $KO $DCBT_PARAMS'"
rec_reset

# lossless-prio3.yaml with a 2 s periodic pass (a module reload and the
# private flag raise no DCB event), and with DSCP 26 on priority 4.
CFG=$REC_TMP/lossless.yaml
{ echo "reconcile: {interval: 2s}"; cat "$LOSSLESS"; } >"$CFG"
HOSTCFG=$REC_TMP/lossless-host.yaml
sed 's/^      trust: dscp$/      dcbx_mode: host\n      trust: dscp/' "$CFG" >"$HOSTCFG"
REMAP=$REC_TMP/remap.yaml
sed 's/dscp_to_priority: {26: 3, 48: 6}/dscp_to_priority: {26: 4, 48: 6}/' "$CFG" >"$REMAP"
grep -q "26: 4" "$REMAP" && grep -q "dcbx_mode: host" "$HOSTCFG" || fail "could not derive the configs from $LOSSLESS"

# eth0 JSON EXPR: status -o json's eth0 entry (q) made true within 20 s.
eth0_shows() {
  local s
  s=$(rctl -o json status) || return 1
  STATUS_JSON="$s" "$PY" -c '
import json, os, sys
q = next((q for q in json.loads(os.environ["STATUS_JSON"]).get("interfaceQos", []) if q["netdev"] == "eth0"), None)
sys.exit(0 if q is not None and eval(sys.argv[1]) else 1)' "$1"
}
dscp_table() { lx "$REC_NODE" cat "$DCBT/dscp2prio" | tr '\n' ',' ; }

run_driver() {  # run_driver DRIVER ETHTOOL_NAME RX_PAUSE_STAT FIX_TEXT
  local d=$1 name=$2 stat=$3 fix=$4 st diag calls out before after
  log "--- $d"
  reload "driver=$d" dcbx_mode=firmware
  expect_eq "$d: ethtool -i driver" "driver: $name" "$(lx "$REC_NODE" ethtool -i eth0 | head -1)"
  rctl apply -f "$CFG" >/dev/null 2>&1 || true
  WAIT_UNTIL_POLL=1 wait_until 20 eth0_shows "q.get('driver', {}).get('name') == '$name' and q['driver'].get('firmwareAgent')" ||
    fail "$d: status did not name the driver and its agent within 20 s: $(rctl -o json status)"
  sleep 3  # a pass or two with the agent owning DCB
  calls=$(rec_calls)
  for c in setpfc setets setapp delapp; do
    expect_eq "$d: $c calls while the NIC's agent owns DCB" 0 "$(json_get "$calls" "j['$c']")"
  done
  st=$(rec_status)
  grep -qF "$fix" <<<"$(json_get "$st" "next(q['driver']['firmwareAgentFix'] for q in j['interfaceQos'] if q['netdev'] == 'eth0')")" ||
    fail "$d: status's fix is not '$fix'"
  expect_eq "$d: qos.pfc while the agent owns DCB" FIELD_SYNC_UNSUPPORTED "$(rec_field_sync "$st" eth0 qos.pfc)"
  diag=$(rctl -o json diagnose --checks dcbx_mode) || true
  grep -qF "$fix" <<<"$(json_get "$diag" "' '.join(f['remedy'] for f in j.get('findings', []))")" ||
    fail "$d: diagnose dcbx_mode does not give the fix '$fix': $diag"
  expect_eq "$d: roced_dcb_firmware_agent" 1 \
    "$(rec_metric "roced_dcb_firmware_agent{device=\"rxe0\",port=\"1\",netdev=\"eth0\",driver=\"$name\"}")"

  # The operator's fix.
  local apply=$CFG
  case $d in
    mlx5) apply=$HOSTCFG ;;
    bnxt_en) reload "driver=$d" dcbx_mode=host ;;
    ice) lx "$REC_NODE" ethtool --set-priv-flags eth0 fw-lldp-agent off || fail "ice: the private flag did not switch" ;;
  esac
  out=$(rctl apply -f "$apply" 2>&1) || fail "$d: apply after the fix failed: $out"
  st=$(rec_wait_converged 30 "$d after the fix")
  out=$(rctl apply -f "$apply" 2>&1) || fail "$d: second apply failed: $out"
  grep -Eq "^(No changes|No steps to write)" <<<"$out" || fail "$d: applying again was not empty: $out"
  grep -q "26 3," <<<"$(dscp_table)" || fail "$d: the NIC's DSCP table does not map 26 to 3: $(dscp_table)"
  expect_eq "$d: PFC" "[False, False, False, True, False, False, False, False]" \
    "$(json_get "$(lx "$REC_NODE" dcb -j pfc show dev eth0)" 'j["prio_pfc"]')"
  if [[ $d != mlx5 ]]; then
    expect_eq "$d: qos.ecn.np_priorities" FIELD_SYNC_NOT_MANAGEABLE "$(rec_field_sync "$st" eth0 qos.ecn.np_priorities)"
  fi
  if [[ $d == ice ]]; then
    grep -q "applied translated" <<<"$(json_get "$st" "next(f.get('message', '') for f in j['fields'] if f['field'] == 'qos.ets')")" ||
      fail "ice: qos.ets does not say it is applied translated onto ice's fixed priority map"
    expect_eq "ice: ETS on the port (priority 3 alone on TC 3, 50%)" "[0, 1, 2, 3, 4, 5, 6, 7] 50 ets" \
      "$(json_get "$(lx "$REC_NODE" dcb -j ets show dev eth0)" '" ".join([str(j["prio_tc"]), str(j["tc_bw"][3]), j["tc_tsa"][3]])')"
  fi

  # Pause frames on priority 3, counted under the driver's own name.
  local series="roced_pfc_pause_frames_received_total{netdev=\"eth0\",priority=\"3\",stat=\"$stat\"}"
  before=$(rec_metric "$series") || fail "$d: no $series"
  lsh "$REC_NODE" "echo '3 2000 rx drain' > $DCBT/storm; sleep 1; echo off > $DCBT/storm"
  after=$(rec_metric "$series") || fail "$d: no $series"
  "$PY" -c "import sys; sys.exit(0 if float('$after') >= float('$before') + 1000 else 1)" ||
    fail "$d: $series went from $before to $after over 1 s of 2000 pauses/s"

  # A DSCP remapped in one apply.
  out=$(rctl apply -f "$REMAP" 2>&1) || fail "$d: remap apply failed: $out"
  rec_wait_converged 30 "$d after the remap" >/dev/null
  grep -q "26 4," <<<"$(dscp_table)" || fail "$d: the NIC's DSCP table does not map 26 to 4 after the remap: $(dscp_table)"
  log "$d: agent's DCB left alone and reported with its fix; converged after it; $stat $before -> $after; remap held"
  rctl apply -f "$NEUTRAL" >/dev/null || fail "could not apply the neutral config"
}

declare -A NAME=([mlx5]=mlx5_core [bnxt_en]=bnxt_en [ice]=ice)
declare -A STAT=([mlx5]=rx_prio3_pause [bnxt_en]=rx_pfc_ena_frames_pri3 [ice]=rx_priority_3_xoff.nic)
declare -A FIX=([mlx5]="qos.dcbx_mode: host" [bnxt_en]="off in NVM" [ice]="ethtool --set-priv-flags eth0 fw-lldp-agent off")
for d in ${ROCED_LAB_DRIVERS:-mlx5 bnxt_en ice}; do
  [[ -n ${NAME[$d]:-} ]] || fail "unknown driver $d (mlx5, bnxt_en, ice)"
  run_driver "$d" "${NAME[$d]}" "${STAT[$d]}" "${FIX[$d]}"
done
pass "each driver: its agent's DCB not fought and its fix named; lossless-prio3 converged, re-plan empty, pause counter under its own name, DSCP remap held"
