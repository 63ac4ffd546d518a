#!/usr/bin/env bash
# The test NIC as the inbox mlx5 driver: its defaults, without the
# MLNX_OFED extras the rest of the lab loads (docs/drivers.md): no
# /sys/class/net/eth0/ecn, the DCQCN parameters in debugfs
# (<debugfs>/mlx5/<device>/cc_params/, drivers/infiniband/hw/mlx5/cong.c).
#  - the knobs config's DCQCN parameters are written to the debugfs files
#    (np_cnp_prio also turning np_cnp_prio_mode to 0, as cong.c does),
#    read back IN_SYNC, and a debugfs write behind the agent's back is
#    undone by the periodic pass;
#  - on a ConnectX without port-buffer support too (buffer_support=0: no
#    buffer op, no PFC delay reported), lossless-prio3.yaml converges: the
#    ECN enables are `not manageable` on this driver (they do not hold
#    convergence back), the DCB fields are in sync, /readyz's converged
#    check passes;
#  - with `qos.ecn.require: true` the same config does not converge.
source "$(dirname "$0")/reconcile_lib.sh"
KO=$(lx "$REC_NODE" sh -c '. /lab/node.env; echo $KCACHE/module/roce_dcbtest.ko')
reload() {  # reload [PARAM=VALUE...]: the module again, with its defaults but those
  lx "$REC_NODE" sh -c "rmmod roce_dcbtest 2>/dev/null; insmod $KO ifname=eth0 $*" || fail "insmod $* failed"
}
rec_on_cleanup "lx $REC_NODE sh -c 'rmmod roce_dcbtest; insmod $KO $DCBT_PARAMS'"
rec_reset
reload
lx "$REC_NODE" test -e /sys/class/net/eth0/ecn && fail "ecn/ is there with the module's defaults"
dev=$(lx "$REC_NODE" readlink /sys/class/net/eth0/device) || fail "eth0 has no device link"
CC=/sys/kernel/debug/mlx5/${dev##*/}/cc_params
cc() { lx "$REC_NODE" cat "$CC/$1"; }
expect_eq "np_cnp_prio_mode at load" 1 "$(cc np_cnp_prio_mode)"

# KNOBS (reconcile_lib.sh) less the buffers: its six DCQCN parameters.
DCQCN=$REC_TMP/dcqcn.yaml
"$PY" - "$KNOBS" "$DCQCN" <<'PY'
import sys, yaml
c = yaml.safe_load(open(sys.argv[1]))
q = c["interfaces"][0]["qos"]
c["interfaces"][0]["qos"] = {"pfc": q["pfc"], "dcqcn": q["dcqcn"]}
yaml.safe_dump(c, open(sys.argv[2], "w"))
PY
out=$(rctl apply -f "$DCQCN" 2>&1) || fail "apply of the DCQCN parameters on the inbox driver failed: $out"
for pair in np_cnp_dscp=46 np_cnp_prio=5 np_min_time_between_cnps=8 rp_time_reset=600 rp_ai_rate=10 \
            rp_rate_reduce_monitor_period=8 np_cnp_prio_mode=0; do
  expect_eq "debugfs ${pair%=*}" "${pair#*=}" "$(cc "${pair%=*}")"
done
st=$(rec_wait_converged 20 "after the DCQCN apply")
for f in qos.dcqcn.cnp_dscp qos.dcqcn.cnp_802p_prio qos.dcqcn.rpg_ai_rate; do
  expect_eq "status $f" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" eth0 "$f")"
done
lx "$REC_NODE" sh -c "echo 77 > $CC/rp_ai_rate" || fail "debugfs write of rp_ai_rate failed"
res=$(lsh "$REC_NODE" "for i in \$(seq 75); do [ \"\$(cat $CC/rp_ai_rate)\" = 10 ] && { echo corrected; exit 0; }; sleep 0.2; done; cat $CC/rp_ai_rate")
[[ $res == corrected ]] || fail "debugfs rp_ai_rate set to 77 behind the agent was not undone in 15 s (reads $res)"

reload buffer_support=0
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
pass "inbox driver: DCQCN through debugfs, drift undone; ECN not manageable and converged; with ecn.require not converged"
