#!/usr/bin/env bash
# `rocectl diagnose --checks link_flaps` on a real carrier: roced's own PFC
# write (a link toggle on mlx5) is not a flap; then node1's data link
# is cut and restored twice (QEMU set_link: the guest kernel sees carrier
# down and up, four carrier changes). The agent reads carrier_changes when
# its state changes (rxe's port goes down and up with the carrier), every
# 10 s, and when asked; it reports eth0 with the count it saw and the
# kernel's total; before the flaps it reports nothing.
source "$(dirname "$0")/reconcile_lib.sh"
rec_on_cleanup "\"$LAB\" restore $REC_NODE"

findings() { rctl -o json diagnose --checks link_flaps || fail "diagnose exited $?"; }
# The agent's flap history starts at its start: restart it so that carrier
# changes earlier tests made by hand (a `dcb pfc set` toggles the link, as
# on mlx5, and is a flap from the agent's view) are not in this test's window.
"$LAB" agent restart "$REC_NODE" >/dev/null 2>&1 || fail "agent restart failed"
expect_eq "link_flaps findings before any flap" 0 "$(json_get "$(findings)" "len(j.get('findings', []))")"

# roced's own PFC write: mlx5 answers a pfc_en change with a link toggle
# (the test NIC drops the carrier for flap_ms): two carrier changes that are
# the agent's, not the cable's, and not reported.
c0=$(lx "$REC_NODE" cat /sys/class/net/eth0/carrier_changes)
rctl apply -f "$LOSSLESS" >/dev/null || fail "apply of lossless-prio3.yaml failed"
for _ in $(seq 30); do
  c1=$(lx "$REC_NODE" cat /sys/class/net/eth0/carrier_changes)
  ((c1 - c0 >= 2)) && break
  sleep 0.5
done
expect_eq "carrier changes from roced's own PFC write" 2 "$((c1 - c0))"
expect_eq "link_flaps findings after roced's own PFC write" 0 "$(json_get "$(findings)" "len(j.get('findings', []))")"

before=$(lx "$REC_NODE" cat /sys/class/net/eth0/carrier_changes)
for i in 1 2; do
  "$LAB" cut "$REC_NODE"
  sleep 1.5
  "$LAB" restore "$REC_NODE"
  sleep 1.5
done
after=$(lx "$REC_NODE" cat /sys/class/net/eth0/carrier_changes)
expect_eq "carrier changes the kernel counted" 4 "$((after - before))"

# The agent's gRPC port is on the cut link: wait until it answers again.
for _ in $(seq 30); do out=$(rctl -o json diagnose --checks link_flaps 2>/dev/null) && break; sleep 1; done
[[ -n ${out:-} ]] || fail "the agent did not answer after the link came back"
"$PY" - "$out" "$after" <<'PY' || fail "link_flaps findings are not the expected ones (above)"
import json, sys
f = json.loads(sys.argv[1]).get("findings", [])
for x in f:
    print(f"  {x['severity']} {x['check']} {x['object']}: {x['summary']}")
assert len(f) == 1 and f[0]["check"] == "link_flaps" and f[0]["object"] == "eth0", f
assert f[0]["severity"] == "SEVERITY_WARNING"
assert f[0]["summary"].startswith("4 carrier changes in the last 6h (last at "), f[0]["summary"]
assert f"the kernel counts {sys.argv[2]} carrier changes" in f[0]["detail"], f[0]["detail"]
PY
pass "4 carrier changes from two cut/restore cycles reported for eth0 (kernel total $after)"
