#!/usr/bin/env bash
# The test NIC as the inbox mlx5 driver without MLNX_OFED and on a ConnectX
# without port-buffer support (module parameters ofed_ecn=0
# buffer_support=0; docs/drivers.md): no /sys/class/net/eth0/ecn, no buffer
# op, no PFC delay reported.
#  - lossless-prio3.yaml converges: the ECN enables are `not manageable` on
#    this driver (they do not hold convergence back), the DCB fields are in
#    sync (the delay the driver does not report is not compared), /readyz's
#    converged check passes;
#  - with `qos.ecn.require: true` the same config does not converge.
source "$(dirname "$0")/reconcile_lib.sh"
KO=$(lx "$REC_NODE" sh -c '. /lab/node.env; echo $KCACHE/module/roce_dcbtest.ko')
reload() {  # reload [PARAM=VALUE...]: the module again, with those parameters
  lx "$REC_NODE" sh -c "rmmod roce_dcbtest 2>/dev/null; insmod $KO ifname=eth0 $*" || fail "insmod $* failed"
}
rec_on_cleanup "lx $REC_NODE sh -c 'rmmod roce_dcbtest; insmod $KO ifname=eth0'"
rec_reset
reload ofed_ecn=0 buffer_support=0
lx "$REC_NODE" test -e /sys/class/net/eth0/ecn && fail "ecn/ is there with ofed_ecn=0"
out=$(lx "$REC_NODE" dcb buffer show dev eth0 2>&1) && fail "dcb buffer show succeeded without buffer support: $out"
expect_eq "PFC delay without buffer support" 0 "$(json_get "$(lx "$REC_NODE" dcb -j pfc show dev eth0)" 'j.get("delay", 0)')"

out=$(rctl apply -f "$LOSSLESS" 2>&1) || fail "apply on the inbox driver failed: $out"
st=$(rec_status)
for f in qos.ecn.np_priorities qos.ecn.rp_priorities; do
  expect_eq "status $f" FIELD_SYNC_NOT_MANAGEABLE "$(rec_field_sync "$st" eth0 $f)"
done
for f in qos.dscp_to_priority qos.ets qos.pfc; do
  expect_eq "status $f" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" eth0 $f)"
done
expect_eq "converged" True "$(json_get "$st" "bool(j['config'].get('converged'))")"
grep -q "^200" <<<"$(rec_readyz)" || fail "/readyz is not 200 on a converged inbox node: $(rec_readyz)"

REQ=$REC_TMP/require.yaml
sed 's/^      ecn: {np_priorities: \[3\], rp_priorities: \[3\]}$/      ecn: {np_priorities: [3], rp_priorities: [3], require: true}/' "$LOSSLESS" >"$REQ"
grep -q "require: true" "$REQ" || fail "could not add ecn.require to a copy of $LOSSLESS"
rctl apply -f "$REQ" >/dev/null 2>&1 || true
st=$(rec_status)
expect_eq "status qos.ecn.np_priorities with require" FIELD_SYNC_UNSUPPORTED "$(rec_field_sync "$st" eth0 qos.ecn.np_priorities)"
expect_eq "converged with require" False "$(json_get "$st" "bool(j['config'].get('converged'))")"
pass "inbox driver: ECN not manageable and converged; with ecn.require not converged"
