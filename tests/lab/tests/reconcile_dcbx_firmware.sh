#!/usr/bin/env bash
# The NIC's firmware runs DCBX (the test NIC's firmware mode, as ConnectX
# with its LLDP agent on: getdcbx without the host bit) and the switch
# advertises PFC on priority 5 to the willing port (the module's stand-in
# rewrites pfc_en 0.3 s after every host write, as the firmware does).
#  1. lossless-prio3.yaml as it is: roced does not fight the firmware. No
#     DCB SET reaches the driver, the link does not flap, status reports
#     qos.pfc, qos.ets and the DSCP map as not manageable with the reason,
#     diagnose's dcbx_mode warns, roced_dcb_dcbx_host_mode is 0; the fields
#     outside DCB (ECN) still converge.
#  2. The same with `qos.dcbx_mode: host`: roced takes host mode (setdcbx),
#     then PFC 3 holds (the firmware no longer rewrites it), every field in
#     sync, the metric 1, and applying it again changes nothing.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset
rec_on_cleanup "lx $REC_NODE sh -c 'echo -1 > $DCBT/peer_pfc; echo host > $DCBT/dcbx_fw'"

lsh "$REC_NODE" "echo 32 > $DCBT/peer_pfc; echo firmware > $DCBT/dcbx_fw"
sleep 1  # the stand-in takes the switch's PFC (one flap) before the apply
expect_eq "PFC the firmware took from the switch" "[False, False, False, False, False, True, False, False]" \
  "$(json_get "$(lx "$REC_NODE" dcb -j pfc show dev eth0)" 'j["prio_pfc"]')"
lsh "$REC_NODE" "echo 0 > $DCBT/calls; echo 0 > $DCBT/link_flaps"

rctl apply -f "$LOSSLESS" >/dev/null 2>&1 || true
sleep 2  # several of the firmware's rewrite delays, and the agent's next pass
calls=$(rec_calls)
for c in setpfc setets setapp delapp setbuffer setdcbx; do
  expect_eq "$c calls in firmware mode" 0 "$(json_get "$calls" "j['$c']")"
done
expect_eq "link flaps in firmware mode" 0 "$(lx "$REC_NODE" cat "$DCBT/link_flaps")"
st=$(rec_status)
for f in qos.dscp_to_priority qos.ets qos.pfc; do
  expect_eq "status $f in firmware mode" FIELD_SYNC_UNSUPPORTED "$(rec_field_sync "$st" eth0 $f)"
done
msg=$(json_get "$st" "next(f.get('message', '') for f in j['fields'] if f['field'] == 'qos.pfc')")
grep -q "DCB belongs to the ConnectX firmware's DCBX agent" <<<"$msg" || fail "qos.pfc's status does not say why: $msg"
expect_eq "status qos.ecn.np_priorities (not DCB)" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" eth0 qos.ecn.np_priorities)"
diag=$(rctl -o json diagnose --checks dcbx_mode) || true
expect_eq "diagnose dcbx_mode" "SEVERITY_WARNING eth0" \
  "$(json_get "$diag" "' '.join([j['findings'][0]['severity'], j['findings'][0]['object']]) if j.get('findings') else 'none'")"
expect_eq "roced_dcb_dcbx_host_mode in firmware mode" 0 "$(rec_metric 'roced_dcb_dcbx_host_mode{netdev="eth0"}')"

HOST=$REC_TMP/host.yaml
sed 's/^      trust: dscp$/      dcbx_mode: host\n      trust: dscp/' "$LOSSLESS" >"$HOST"
grep -q "dcbx_mode: host" "$HOST" || fail "could not add dcbx_mode to a copy of $LOSSLESS"
out=$(rctl apply -f "$HOST" 2>&1) || fail "apply with dcbx_mode host failed: $out"
grep -q "qos.dcbx_mode" <<<"$out" || fail "the plan did not take host mode first: $out"
sleep 1  # longer than the firmware's rewrite delay: in host mode it must not come
d=$(lx "$REC_NODE" dcb -j dcbx show dev eth0)
expect_eq "DCBX host bit after the apply" True "$(json_get "$d" 'bool(j.get("host"))')"
s=$(rec_snapshot)
expect_eq "PFC after taking host mode" "[False, False, False, True, False, False, False, False]" "$(snap_get "$s" "j['pfc']['prio_pfc']")"
st=$(rec_status)
for f in qos.dcbx_mode qos.dscp_to_priority qos.ets qos.pfc; do
  expect_eq "status $f in host mode" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" eth0 $f)"
done
expect_eq "roced_dcb_dcbx_host_mode in host mode" 1 "$(rec_metric 'roced_dcb_dcbx_host_mode{netdev="eth0"}')"
out=$(rctl apply -f "$HOST" 2>&1) || fail "second apply failed: $out"
grep -q "^No changes" <<<"$out" || fail "second apply in host mode was not empty: $out"
pass "firmware mode: 0 DCB writes, 0 flaps, reported and diagnosed; dcbx_mode host: taken, PFC 3 held, re-plan empty"
