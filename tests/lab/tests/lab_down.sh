#!/usr/bin/env bash
# ctest fixture cleanup, and the test that `lab down` leaves nothing behind:
# no QEMU process of this lab, no namespace (and so no tap or bridge), no run dir.
source "$(dirname "$0")/lib.sh"

why=$(lab_preflight_reason)
[[ -z $why ]] || skip "$why"

had_lab=0
[[ -f /run/$LAB_NAME/state ]] && had_lab=1
"$LAB" down || fail "lab down failed"

left=()
for pid in $(pgrep -f -- "guest=$LAB_NAME-node" || true); do
  [[ $pid == "$$" ]] && continue
  tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q qemu-system && left+=("qemu pid $pid")
done
[[ -e /run/netns/$LAB_NAME ]] && left+=("netns $LAB_NAME")
ip netns list | grep -qx -- "$LAB_NAME\( .*\)\?" && left+=("netns $LAB_NAME (listed)")
[[ -d /run/$LAB_NAME ]] && left+=("run dir /run/$LAB_NAME")
# taps/bridge live only in the namespace; make sure none leaked into the root one
for t in labbr0 tap-node1 tap-node2 tap-node3 tap-node4; do
  ip link show "$t" >/dev/null 2>&1 && left+=("link $t in the root namespace")
done
((${#left[@]} == 0)) || fail "left behind after down: ${left[*]}"
# a second down is harmless
"$LAB" down >/dev/null 2>&1 || fail "second lab down failed"
((had_lab)) || skip "no lab was up (lab_up skipped); nothing to verify"
pass "no QEMU process, namespace, tap, bridge or run dir left"
