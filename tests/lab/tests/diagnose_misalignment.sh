#!/usr/bin/env bash
# `rocectl diagnose` against a misaligned node: with a config that manages
# nothing, the DSCP map sends RoCE's DSCP 26 (ToS 106) to priority 3 while
# PFC is on priority 4 and ECN is off there, set by hand with dcb and sysfs.
# diagnose exits 1 with the pfc_dscp error naming both priorities and the
# ECN warning; after `rocectl apply -f lossless-prio3.yaml` the same checks
# find nothing and it exits 0.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

# By hand, as an operator would (each step says what failed; a SET the
# test NIC answers with a transient refusal is tried again).
misalign() {
  lsh "$REC_NODE" "
    dcb pfc set dev eth0 prio-pfc 4:on || { echo 'dcb pfc set failed'; exit 1; }
    dcb app replace dev eth0 dscp-prio 26:3 || { echo 'dcb app replace failed'; exit 1; }
    if [ -d /sys/kernel/config/rdma_cm ]; then
      mkdir -p /sys/kernel/config/rdma_cm/rxe0
      echo 106 > $RDMA_CM/default_roce_tos || { echo 'rdma_cm ToS write failed'; exit 1; }
    fi"
}
ok=0
for attempt in 1 2 3; do
  if misalign; then ok=1; break; fi
  log "attempt $attempt to misalign node1 failed; again"
  sleep 1
done
((ok)) || fail "could not misalign node1 by hand"
state=$(lx "$REC_NODE" dcb -j pfc show dev eth0)
expect_eq "PFC on priority 4 after the hand edit" True "$(json_get "$state" "j['prio_pfc'][4]")"
if ! lx "$REC_NODE" test -d "$RDMA_CM"; then
  # No rdma_cm configfs: the ToS comes from the config instead.
  printf '%s\n' 'apiVersion: roced/v1' 'kind: NodeConfig' 'mode: observe' 'interfaces:' \
    '  - match: {netdev: eth0}' '    roce: {default_tos: 106}' >"$REC_TMP/tos.yaml"
  rctl apply -f "$REC_TMP/tos.yaml" >/dev/null || fail "apply of an observe config with the ToS failed"
fi

rc=0
out=$(rctl -o json diagnose --checks pfc_dscp,ecn) || rc=$?
((rc == 1)) || fail "diagnose exit status $rc on a misaligned node, want 1: $out"
"$PY" - "$out" <<'PY' || fail "diagnose findings are not the expected ones (above)"
import json, sys
f = json.loads(sys.argv[1]).get("findings", [])
for x in f:
    print(f"  {x['severity']} {x['check']} {x['object']}: {x['summary']}")
err = [x for x in f if x["check"] == "pfc_dscp" and x["severity"] == "SEVERITY_ERROR"]
assert len(err) == 1, "one pfc_dscp error"
assert "DSCP 26" in err[0]["summary"] and "priority 3" in err[0]["summary"] and "[4]" in err[0]["summary"], err
assert err[0]["object"] == "eth0"
ecn = [x for x in f if x["check"] == "ecn"]
assert any("notification point is off on PFC priority [4]" in x["summary"] for x in ecn), ecn
assert f[0]["severity"] == "SEVERITY_ERROR", "errors first"
PY
table=$(rctl diagnose --checks pfc_dscp,ecn) || true
grep -q "^ERROR  pfc_dscp  eth0: RoCE traffic (ToS 106 = DSCP 26) is classified to priority 3, but PFC is on \[4\]" <<<"$table" ||
  fail "the table does not lead with the pfc_dscp error:
$table"
grep -q "^    fix: " <<<"$table" || fail "the table gives no remedy:
$table"

rctl apply -f "$LOSSLESS" >/dev/null || fail "apply of lossless-prio3.yaml failed"
out=$(rctl -o json diagnose --checks pfc_dscp,ecn,roce_mode,roce_v2_gid,port_state) ||
  fail "diagnose after lossless-prio3 exited $?: $out"
expect_eq "findings after lossless-prio3" 0 "$(json_get "$out" "len(j.get('findings', []))")"
pass "misaligned node: pfc_dscp error (DSCP 26 -> 3, PFC on 4) and ECN warning, exit 1; aligned by lossless-prio3: no findings, exit 0"
