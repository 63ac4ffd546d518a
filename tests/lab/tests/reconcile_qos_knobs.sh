#!/usr/bin/env bash
# The QoS knobs on the DCB test NIC: the port buffers (DCB netlink), the
# PFC storm prevention timeout (ethtool ioctl) and the CNP/DCQCN parameters
# (MLNX_OFED sysfs) are applied and read back with independent clients
# (dcb -j buffer, ethtool --get-tunable, the sysfs files); status says
# IN_SYNC; "auto" reads back as mlx5's 100 ms and counts as in sync; then a
# change behind the agent's back to each (dcb buffer set, ethtool
# --set-tunable, a sysfs write) is undone: the buffer through RTNLGRP_DCB,
# the other two (which raise no event) by the periodic pass.
source "$(dirname "$0")/reconcile_lib.sh"
BOUND=${DRIFT_BOUND_S:-15}
rec_reset

# KNOBS: reconcile_lib.sh
before=$(rec_knobs)
out=$(rctl apply -f "$KNOBS" 2>&1) || fail "apply failed:
$out"
for f in qos.buffers qos.pfc_prevention qos.dcqcn.cnp_dscp qos.dcqcn.rpg_ai_rate; do
  grep -q "~ eth0 $f\$" <<<"$out" || fail "no step for $f in:
$out"
done
want=$("$PY" - "$before" <<'PY'
import json, sys
j = json.loads(sys.argv[1])
j["buffer"]["prio_buffer"] = [0, 0, 0, 1, 0, 0, 0, 0]
j["buffer"]["buffer_size"] = [196608, 262144, 0, 0, 0, 0, 0, 0]
j["tout"] = "500"
j.update(cnp_dscp=46, cnp_802p_prio=5, min_time_between_cnps=8, rpg_time_reset=600, rpg_ai_rate=10,
         rate_reduce_monitor_period=8)
print(json.dumps(j, sort_keys=True))
PY
)
expect_same_state "after the apply (vs. wanted)" "$want" "$(rec_knobs)"
st=$(rec_wait_converged 20 "after the apply")
for f in qos.buffers qos.pfc_prevention qos.dcqcn.cnp_dscp qos.dcqcn.cnp_802p_prio qos.dcqcn.rpg_time_reset; do
  expect_eq "status $f" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" eth0 "$f")"
done
grep -q 'qos.buffers' <<<"$(rctl status)" || fail "rocectl status does not show qos.buffers"

# Drift, one knob at a time, each changed and polled for in the guest.
# drift NAME 'CHANGE' 'TEST-THAT-IS-TRUE-WHEN-CORRECTED'
drift() {
  local res
  res=$(lsh "$REC_NODE" "
    $2
    s=\$(date +%s%N)
    while :; do
      if $3; then echo corrected \$(( (\$(date +%s%N) - s) / 1000000 )); exit 0; fi
      [ \$(( (\$(date +%s%N) - s) / 1000000000 )) -ge $BOUND ] && { echo 'not corrected'; exit 0; }
      sleep 0.2
    done") || fail "drift poll for $1 failed: $res"
  [[ $res == corrected* ]] || fail "$1 was not undone within $BOUND s"
  log "$1 corrected after ${res#corrected } ms"
  DRIFT_MS+="$1 ${res#corrected } ms; "
}
DRIFT_MS=""
drift "dcb buffer set prio-buffer all:0" "dcb buffer set dev eth0 prio-buffer all:0" \
  "dcb -j buffer show dev eth0 | grep -q '\"prio_buffer\":\[0,0,0,1,0,0,0,0\]'"
drift "ethtool --set-tunable pfc-prevention-tout 1000" "ethtool --set-tunable eth0 pfc-prevention-tout 1000" \
  "ethtool --get-tunable eth0 pfc-prevention-tout | grep -q ': 500'"
drift "cnp_dscp written 48" "echo 48 > /sys/class/net/eth0/ecn/roce_np/cnp_dscp" \
  "grep -qx 46 /sys/class/net/eth0/ecn/roce_np/cnp_dscp"
expect_same_state "after the drift corrections" "$want" "$(rec_knobs)"

# auto: written as 0xffff, read back as mlx5's 100 ms, in sync.
AUTO=$(sed 's/pfc_prevention: {timeout_ms: 500}/pfc_prevention: {auto: true}/' "$KNOBS" | cfg auto)
out=$(rctl apply -f "$AUTO" 2>&1) || fail "apply of auto failed:
$out"
expect_eq "tout after auto" 100 "$(json_get "$(rec_knobs)" "j['tout']")"
st=$(rec_wait_converged 20 "after auto")
expect_eq "status qos.pfc_prevention (auto)" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" eth0 qos.pfc_prevention)"
pass "applied, read back, in sync; auto = 100 ms in sync; drift: $DRIFT_MS"
