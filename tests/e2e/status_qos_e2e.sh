#!/usr/bin/env bash
# rocectl status shows every RoCE port's QoS as the node has it, whether or
# not the config manages it: the real roced on a copy of the fixture tree
# with its DCB state from tests/fixtures/dcb (--dcb-fixture), ECN enables in
# the sysfs copy and rdma_cm defaults in a scratch configfs. The config
# manages only ens1f0's MTU (observe mode: nothing is written). Checked:
# the table shows the fixture's PFC, trust, DSCP map and ETS with only the
# MTU starred; -o json and -o yaml carry the same; a change to the fixture
# shows at the next pass; --dcb-fixture with the live /sys is refused.
# Usage: status_qos_e2e.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
WORK=$(mktemp -d /tmp/roced-status-qos-e2e.XXXXXX)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }
python3 -c 'import yaml' 2>/dev/null || { echo "SKIP: python3-yaml not installed"; exit 77; }

# The node: the fixture tree, its DCB files, ECN on priority 3 as
# notification point only (MLNX_OFED's enables), RoCE v2 with ToS 106 on
# mlx5_0 port 1; an empty debugfs (no DCQCN parameters).
cp -a "$SRC/tests/fixtures/sysfs" "$WORK/sysfs"
cp -a "$SRC/tests/fixtures/dcb" "$WORK/dcb"
for role in roce_np roce_rp; do
  mkdir -p "$WORK/sysfs/class/net/ens1f0/ecn/$role/enable"
  for p in 0 1 2 3 4 5 6 7; do echo 0 >"$WORK/sysfs/class/net/ens1f0/ecn/$role/enable/$p"; done
done
echo 1 >"$WORK/sysfs/class/net/ens1f0/ecn/roce_np/enable/3"
mkdir -p "$WORK/configfs/rdma_cm/mlx5_0/ports/1" "$WORK/debugfs"
echo "RoCE v2" >"$WORK/configfs/rdma_cm/mlx5_0/ports/1/default_roce_mode"
echo 106 >"$WORK/configfs/rdma_cm/mlx5_0/ports/1/default_roce_tos"
cat >"$WORK/roced.yaml" <<'YAML'
apiVersion: roced/v1
kind: NodeConfig
mode: observe
reconcile: {interval: 1s}
interfaces:
  - match: {netdev: ens1f0}
    mtu: 9000
YAML

"$BIN/roced" --sysfs-root "$WORK/sysfs" --dcb-fixture "$WORK/dcb" --configfs-root "$WORK/configfs" \
  --debugfs-root "$WORK/debugfs" --config "$WORK/roced.yaml" --grpc-listen "" --metrics-listen "" \
  --socket "$WORK/roced.sock" --state-dir "$WORK/state" 2>"$WORK/roced.log" &
PID=$!
await_agent_socket || { echo "FAIL - roced did not answer within 10 s"; exit 1; }
ctl() { "$BIN/rocectl" --socket "$WORK/roced.sock" "$@"; }

# qos_has NETDEV PYTHON-EXPR: true once status -o json's entry for NETDEV
# makes EXPR (over q, the entry) true.
qos_has() {
  ctl -o json status | python3 -c '
import json, sys
qos = {q["netdev"]: q for q in json.load(sys.stdin)["interfaceQos"]}
q = qos.get(sys.argv[1])
sys.exit(0 if q is not None and eval(sys.argv[2]) else 1)' "$1" "$2"
}
check "the first pass publishes the fixture's QoS" wait_until 10 qos_has ens1f0 'q["pfc"]["priorities"] == [3]'

# block NETDEV: the port's lines of the status table.
block() { awk -v head="$1 (" 'index($0, head) == 1 {on = 1; print; next} on && /^ / {print; next} {on = 0}' <<<"$table"; }
table=$(ctl status)
ens1f0=$(block ens1f0)
check "ens1f0's block names its RDMA port" grep -qxF "ens1f0 (mlx5_0 port 1)" <<<"$ens1f0"
check "the managed MTU is starred" grep -Eq '^  \* mtu ' <<<"$ens1f0"
check "nothing else of ens1f0 is starred (observed only)" test "$(grep -c '^  \*' <<<"$ens1f0")" = 1
check "observed DCBX mode" grep -qxF "    dcbx        host" <<<"$ens1f0"
check "observed trust" grep -qxF "    trust       dscp" <<<"$ens1f0"
check "observed DSCP map by priority" grep -qxF "    dscp->prio  26->3 48->6" <<<"$ens1f0"
check "observed PFC with delay and capability" grep -qxF "    pfc         3  (delay 0, cap 8)" <<<"$ens1f0"
check "observed ETS" grep -qxF "    ets         prio->tc 0 0 0 1 0 0 0 0; tc0-1 ets 50%, tc2-7 strict" <<<"$ens1f0"
check "observed buffers" grep -qxF "    buffers     prio->buf 0 0 0 1 0 0 0 0; bytes 130944 130944 of 1048576" <<<"$ens1f0"
check "observed ECN enables" grep -qxF "    ecn         np 3, rp none" <<<"$ens1f0"
check "observed rdma_cm defaults" grep -qxF "    roce        v2, tos 106 (dscp 26, ecn 2)" <<<"$ens1f0"
check "what the node lacks is named" grep -Eq '^    not read    .*dcqcn' <<<"$ens1f0"
ens1f1=$(block ens1f1)
check "a port the config does not name is shown too, nothing starred" \
  bash -c "grep -qxF '    trust       pcp' <<<'$ens1f1' && ! grep -q '^  \*' <<<'$ens1f1'"
check "its firmware DCBX, PFC off and vendor ETS" bash -c "grep -qxF '    dcbx        firmware' <<<'$ens1f1' &&
  grep -qxF '    pfc         none  (delay 0, cap 8)' <<<'$ens1f1' &&
  grep -qxF '    ets         prio->tc 1 0 2 3 4 5 6 7; tc0-7 vendor' <<<'$ens1f1'"
check "a netdev without a DCB file has no DCB" grep -Eq '^    not read    dcb, ' <<<"$(block eth0)"
check "ens1f0's driver and roced's profile for it" grep -qxF "    driver      mlx5_core 6.1.0 (profile mlx5)" <<<"$ens1f0"
check "what mlx5 gives no control of on ens1f0 (no tunable, no DCQCN files)" \
  grep -qxF "    no control  qos.pfc_prevention, qos.dcqcn (-o yaml says why)" <<<"$ens1f0"
ens2f0=$(block ens2f0)
bnxt_block_ok() {  # over the block's words, as the lines wrap at 80 columns
  local flat
  flat=$(tr -s ' \n' ' ' <<<"$ens2f0")
  grep -qF "driver bnxt_en 6.1.0 (profile bnxt_en)" <<<"$flat" &&
    grep -qF "no control qos.dcbx_mode, qos.buffers, qos.pfc_prevention, qos.dcqcn, qos.ecn (-o" <<<"$flat" &&
    grep -qF "dcb owner the NIC firmware's LLDP/DCBX agent (LLD_MANAGED, from NVM); to give DCB to the host: turn" <<<"$flat" &&
    grep -qF "reload bnxt_en: ens2f0 then reports host mode" <<<"$flat"
  local rc=$?
  ((rc == 0)) || echo "$ens2f0"
  return $rc
}
check "bnxt_en's fields without a control, its firmware agent and the NVM fix" bnxt_block_ok
check "a netdev whose driver the fixture does not name has no driver line" \
  bash -c "! grep -q '^    driver ' <<<'$(block eth0)'"

ctl -o json status >"$WORK/status.json"
ctl -o yaml status >"$WORK/status.yaml"
check "-o json and -o yaml carry the same QoS, managed and observed" python3 - "$WORK/status.json" "$WORK/status.yaml" <<'PY'
import json, sys, yaml
docs = [json.load(open(sys.argv[1])), yaml.safe_load(open(sys.argv[2]))]
for doc in docs:
    for q in doc["interfaceQos"]:
        # YAML reads the map's keys as numbers and the timestamp as a time.
        q.pop("observedAt")
        if "dscp" in q:
            q["dscp"]["dscpToPriority"] = {str(k): v for k, v in q["dscp"]["dscpToPriority"].items()}
    qos = {q["netdev"]: q for q in doc["interfaceQos"]}
    assert sorted(qos) == ["ens1f0", "ens1f1", "ens2f0", "eth0"], sorted(qos)
    q = qos["ens1f0"]
    assert q["managed"] == ["mtu"], q["managed"]
    assert q["trust"] == "TRUST_DSCP" and q["dscp"]["dscpToPriority"] == {"26": 3, "48": 6}, q
    assert q["pfc"]["priorities"] == [3] and q["pfc"]["capability"] == 8, q["pfc"]
    assert q["ets"]["priorityToTc"] == [0, 0, 0, 1, 0, 0, 0, 0] and q["ets"]["tcBandwidth"][:2] == [50, 50], q["ets"]
    assert q["ecnNp"]["priorities"] == [3] and q["ecnRp"]["priorities"] == [], q
    assert q["roceMode"] == "ROCE_MODE_V2" and q["roceTos"] == 106, q
    assert qos["ens1f1"]["managed"] == [] and qos["ens1f1"]["trust"] == "TRUST_PCP", qos["ens1f1"]
    assert "dcb" in qos["eth0"]["unread"] and "pfc" not in qos["eth0"], qos["eth0"]
assert docs[0]["interfaceQos"] == docs[1]["interfaceQos"]
PY

# Someone changes the node: PFC on 3 and 4, the DSCP entries deleted (PCP
# trust), ETS 60/40, ECN moved to priority 4. Nothing here is managed, so
# nothing is corrected; status follows at the next pass (1 s).
sed -i -e 's/^pfc.enabled: 3$/pfc.enabled: 3 4/' -e 's/^app.dscp: .*/app.dscp:/' \
  -e 's/^ets.tc_bw: 50 50 /ets.tc_bw: 60 40 /' "$WORK/dcb/ens1f0"
echo 0 >"$WORK/sysfs/class/net/ens1f0/ecn/roce_np/enable/3"
echo 1 >"$WORK/sysfs/class/net/ens1f0/ecn/roce_np/enable/4"
check "a change to the fixture shows in status" wait_until 10 qos_has ens1f0 'q["pfc"]["priorities"] == [3, 4]'
ens1f0=$(table=$(ctl status); block ens1f0)
check "the new PFC priorities" grep -qxF "    pfc         3,4  (delay 0, cap 8)" <<<"$ens1f0"
check "PCP trust once the app table is empty" grep -qxF "    trust       pcp" <<<"$ens1f0"
check "no DSCP entries" grep -qxF "    dscp->prio  none" <<<"$ens1f0"
check "the new ETS bandwidths" \
  grep -qxF "    ets         prio->tc 0 0 0 1 0 0 0 0; tc0 ets 60%, tc1 ets 40%, tc2-7 strict" <<<"$ens1f0"
check "the new ECN enables" grep -qxF "    ecn         np 4, rp none" <<<"$ens1f0"
check "still only the MTU starred" test "$(grep -c '^  \*' <<<"$ens1f0")" = 1
check "the fixture was not written (observe mode, read-only DCB fixture)" grep -qx "pfc.enabled: 3 4" "$WORK/dcb/ens1f0"
kill "$PID" && wait "$PID" 2>/dev/null || true
PID=

# --dcb-fixture is for a fixture tree: with the live /sys roced refuses it
# before it starts anything (no socket, no state directory).
set +e
"$BIN/roced" --dcb-fixture "$WORK/dcb" --config "$WORK/roced.yaml" --grpc-listen "" --metrics-listen "" \
  --socket "$WORK/live.sock" --state-dir "$WORK/live-state" >/dev/null 2>"$WORK/live.err"
rc=$?
set -e
check "--dcb-fixture with the live /sys exits 1 naming the flag" \
  bash -c "test $rc = 1 && grep -q -- '--dcb-fixture is for a fixture tree' '$WORK/live.err'"
check "... and started nothing" bash -c "test ! -e '$WORK/live.sock' && test ! -e '$WORK/live-state'"

finish
