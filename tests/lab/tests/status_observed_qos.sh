#!/usr/bin/env bash
# rocectl status shows eth0's QoS as the kernel has it, whether or not the
# config manages it: with a config that manages only eth0's MTU, PFC, the
# DSCP app table (and with it trust), ETS and ECN set by hand with `dcb` and
# sysfs are shown as observed (not starred), equal to what `dcb -j` and the
# test NIC's sysfs say; a later change by hand shows after the DCB netlink
# event's pass and is not corrected (nothing manages it).
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

m=$(cfg mtu-only <<'EOF2'
apiVersion: roced/v1
kind: NodeConfig
interfaces:
  - match: {netdev: eth0}
    mtu: 1500
EOF2
)
out=$(rctl apply -f "$m") || fail "apply of the MTU-only config failed: $out"

# ECN first: its sysfs file raises no event, so only a pass that starts
# after it (one of the dcb changes' passes) is sure to see it; written last,
# it could wait for the 30 s periodic pass.
lsh "$REC_NODE" "
  echo 1 > /sys/class/net/eth0/ecn/roce_np/enable/3
  dcb pfc set dev eth0 prio-pfc all:off 3:on
  dcb app add dev eth0 dscp-prio 26:3 48:6
  dcb ets set dev eth0 tc-tsa all:strict 0:ets 1:ets tc-bw all:0 0:50 1:50 prio-tc all:0 3:1" ||
  fail "could not set eth0's QoS by hand"

# status_eth0 EXPR: true once status -o json's eth0 entry (q) makes EXPR true.
status_eth0() {
  local s
  s=$(rctl -o json status) || return 1
  STATUS_JSON="$s" "$PY" -c '
import json, os, sys
q = next((q for q in json.loads(os.environ["STATUS_JSON"])["interfaceQos"] if q["netdev"] == "eth0"), None)
sys.exit(0 if q is not None and eval(sys.argv[1]) else 1)' "$1"
}
# Every hand change shown: the last (ETS) event's pass has been published.
WAIT_UNTIL_POLL=1 wait_until 30 status_eth0 'q["pfc"]["priorities"] == [3] and q.get("ecnNp", {}).get("priorities") == [3] and len(q.get("dscp", {}).get("dscpToPriority", {})) == 2 and q["ets"]["priorityToTc"][3] == 1' ||
  fail "status did not show PFC on 3, ECN np on 3, two DSCP entries and priority 3 in TC 1 within 30 s: $(rctl -o json status)"

# The agent's view against independent clients.
node=$(lsh "$REC_NODE" "
  dcb -j pfc show dev eth0; echo; dcb -j app show dev eth0; echo; dcb -j ets show dev eth0; echo
  cat $DCBT/trust") || fail "cannot read eth0 with dcb"
status=$(rctl -o json status) || fail "rocectl status failed"
check=$(STATUS_JSON="$status" NODE="$node" "$PY" - 2>&1 <<'PY'
import json, os
lines = [l for l in os.environ["NODE"].splitlines() if l.strip()]  # dcb -j may end its line itself
pfc, app, ets = (json.loads(l) for l in lines[:3])
trust = lines[3].strip()
q = next(q for q in json.loads(os.environ["STATUS_JSON"])["interfaceQos"] if q["netdev"] == "eth0")
assert q["managed"] == ["mtu"], q["managed"]
assert q["pfc"]["priorities"] == [p for p, on in enumerate(pfc["prio_pfc"]) if on], (q["pfc"], pfc)
assert q["pfc"]["capability"] == pfc["pfc_cap"], (q["pfc"], pfc)
dscp = {int(d): p for d, p in q["dscp"]["dscpToPriority"].items()}
assert dscp == {d: p for d, p in app.get("dscp_prio", [])}, (dscp, app)
assert q["trust"] == {"dscp": "TRUST_DSCP", "pcp": "TRUST_PCP"}[trust], (q["trust"], trust)
assert q["ets"]["priorityToTc"] == ets["prio_tc"], (q["ets"], ets)
names = {0: "strict", 1: "cbs", 2: "ets", 255: "vendor"}
assert [names[t] for t in q["ets"]["tsa"]] == ets["tc_tsa"], (q["ets"], ets)
assert q["ets"]["tcBandwidth"][:2] == ets["tc_bw"][:2] == [50, 50], (q["ets"], ets)
print("pfc %s, dscp %s, trust %s, ets %s" % (q["pfc"]["priorities"], sorted(dscp.items()), trust, ets["tc_tsa"][:2]))
PY
) || fail "status differs from the node: $check"
log "status matches dcb -j: $check"

table=$(rctl status) || fail "rocectl status failed"
eth0=$(awk 'index($0, "eth0 (") == 1 {on = 1; print; next} on && /^ / {print; next} {on = 0}' <<<"$table")
grep -qxF "  * mtu         1500" <<<"$eth0" || fail "the managed MTU is not starred:"$'\n'"$eth0"
[ "$(grep -c '^  \*' <<<"$eth0")" = 1 ] || fail "more than the MTU is starred:"$'\n'"$eth0"
for line in "    trust       dscp" "    dscp->prio  26->3 48->6" "    ecn         np 3, rp none"; do
  grep -qxF "$line" <<<"$eth0" || fail "no '$line' in:"$'\n'"$eth0"
done
grep -Eq '^    pfc         3  \(delay [0-9]+, cap 8\)$' <<<"$eth0" || fail "no PFC line for priority 3 in:"$'\n'"$eth0"

# A change by hand: shown at the pass the DCB event starts, left as it is.
lsh "$REC_NODE" "dcb pfc set dev eth0 prio-pfc 3:off 4:on; dcb app del dev eth0 dscp-prio 26:3 48:6" ||
  fail "could not change eth0's QoS by hand"
WAIT_UNTIL_POLL=1 wait_until 30 status_eth0 'q["pfc"]["priorities"] == [4] and q["trust"] == "TRUST_PCP"' ||
  fail "status did not follow the change within 30 s: $(rctl -o json status)"
expect_eq "PFC left as set by hand (not managed)" "[False, False, False, False, True, False, False, False]" \
  "$(json_get "$(lx "$REC_NODE" dcb -j pfc show dev eth0)" 'j["prio_pfc"]')"
pass "observed QoS shown, managed MTU starred, a change followed"
