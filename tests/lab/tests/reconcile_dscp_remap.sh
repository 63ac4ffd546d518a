#!/usr/bin/env bash
# A remap of an existing DSCP entry converges in one apply, together with
# the removal of another entry. On mlx5 adding 26 -> 4 replaces 26 -> 3
# (mlx5e_dcbnl_ieee_setapp), after which deleting 26 -> 3 is refused with
# ENOENT (mlx5e_dcbnl_ieee_delapp: the priority no longer matches), and the
# kernel stops a multi-entry delete at its first error (dcbnl_ieee_del): a
# delete of [26 -> 3, 48 -> 6] in one request would leave 48 -> 6 behind and
# the apply would fail verification and roll back.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

rctl apply -f "$LOSSLESS" >/dev/null || fail "apply of lossless-prio3.yaml failed"
REMAP=$(cfg remap <<'EOF'
apiVersion: roced/v1
kind: NodeConfig
mode: enforce
interfaces:
  - match: {netdev: eth0}
    qos:
      trust: dscp
      dscp_to_priority: {26: 4}
EOF
)
lsh "$REC_NODE" "echo 0 > $DCBT/calls"
out=$(rctl apply -f "$REMAP" 2>&1) || fail "the remap apply failed: $out"
grep -q "rolled back" <<<"$out" && fail "the remap apply rolled back: $out"
s=$(rec_snapshot)
expect_eq "DSCP app table after one apply" "[[26, 4]]" "$(snap_get "$s" "sorted(j['app']['dscp_prio'])")"
expect_eq "trust" dscp "$(snap_get "$s" "j['trust']")"
expect_eq "module's dscp2prio" "26 4" "$(lx "$REC_NODE" cat "$DCBT/dscp2prio" | paste -sd,)"
expect_eq "status qos.dscp_to_priority" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$(rec_status)" eth0 qos.dscp_to_priority)"
pass "26->3 48->6 to 26->4 in one apply: $(rec_calls)"
