#!/usr/bin/env bash
# Fault matrix: the agent's state directory (--state-dir
# /var/lib/roced, where the lab starts roced) is out of space during an
# apply. A tmpfs of 64 KiB more than the directory holds is mounted over it
# (the agent's files copied in first: accepted config, audit log), then
# filled:
#  1. Full to the last page: an apply of lossless-prio3 over gRPC is refused
#     before the node is touched (the apply journal cannot be written):
#     rocectl exits 1 saying the state could not be persisted (ENOSPC); the
#     node (dcb -j, sysfs, configfs) and the generation are as before.
#  2. One page free: the journal fits, the accepted config does not: the
#     apply runs, then is undone (the agent must not keep a config it cannot
#     find after a restart): rocectl exits 1 saying it could not be persisted
#     and that the node was put back; node and generation as before.
#  In both, the agent keeps serving (status answers, converged on the old
#  config) and logs why.
#  3. Space freed: the same apply works, lands in the tmpfs's accepted.json
#     (so the agent really was writing there), and survives an agent restart
#     (generation, desired config and node unchanged after it).
# On exit the tmpfs's files are copied back to the directory under it and it
# is unmounted before the baseline is restored.
source "$(dirname "$0")/reconcile_lib.sh"
SD=/var/lib/roced
# Copied back only once the tmpfs held a full copy (the directory under it
# is untouched until then).
rec_on_cleanup 'lsh node1 "
  mountpoint -q $SD || exit 0
  if [ -e /run/fault-state.copied ]; then
    rm -rf /tmp/fault-state.keep; mkdir /tmp/fault-state.keep
    rm -f $SD/fill; cp -a $SD/. /tmp/fault-state.keep/
    umount $SD
    cp -a /tmp/fault-state.keep/. $SD/; rm -rf /tmp/fault-state.keep
  else
    umount $SD
  fi
  rm -f /run/fault-state.copied"'
rec_reset
base=$(rec_snapshot)
gen=$(rec_generation)

lsh "$REC_NODE" "
  mountpoint -q $SD && { echo '$SD is already a mount point' >&2; exit 1; }
  rm -rf /tmp/fault-state.keep; cp -a $SD /tmp/fault-state.keep
  kb=\$(du -sk /tmp/fault-state.keep | cut -f1)
  mount -t tmpfs -o size=\$((kb + 64))k,mode=0755 fault-state $SD
  cp -a /tmp/fault-state.keep/. $SD/ || { umount $SD; exit 1; }
  : > /run/fault-state.copied; rm -rf /tmp/fault-state.keep
  dd if=/dev/zero of=$SD/fill bs=4096 2>/dev/null || true
  [ \$(stat -f -c %a $SD) = 0 ]" || fail "could not mount and fill a tmpfs over $SD"

# apply_refused WHAT REGEX: the apply of lossless-prio3 fails, saying REGEX;
# node, generation and the accepted config stay.
apply_refused() {
  local rc=0 out st
  out=$(rctl apply -f "$LOSSLESS" 2>&1) || rc=$?
  log "$1: rocectl exit $rc: $(tail -n 1 <<<"$out")"
  ((rc == 3)) || fail "$1: rocectl apply exit status $rc (want 3):
$out"
  grep -qE "$2" <<<"$out" || fail "$1: rocectl does not say /$2/:
$out"
  grep -q 'No space left on device' <<<"$out" || fail "$1: rocectl does not give the cause (ENOSPC):
$out"
  expect_same_state "$1: the node after the refused apply" "$base" "$(rec_snapshot)"
  st=$(rec_status)
  expect_eq "$1: accepted generation" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
  expect_eq "$1: desired interfaces" "[]" "$(json_get "$st" "j['config']['desired'].get('interfaces', [])")"
  expect_eq "$1: converged" True "$(json_get "$st" "j['config'].get('converged', False)")"
}

mark=$(log_mark "$REC_NODE")
apply_refused "state dir full" 'cannot journal the apply, nothing changed'
lsh "$REC_NODE" "truncate -s -4096 $SD/fill; [ \$(stat -f -c %a $SD) = 1 ]" || fail "could not free exactly one page"
apply_refused "one page free" 'cannot persist the accepted config.*the node was put back as it was'
line=$(expect_log "$REC_NODE" "$mark" 'restore \(apply that could not be persisted\)' "the agent's log of the undone apply")
log "agent log: $line"

lx "$REC_NODE" rm -f "$SD/fill"
rctl apply -f "$LOSSLESS" >/dev/null || fail "apply after freeing the space failed"
st=$(rec_status)
gen2=$(json_get "$st" "int(j['config']['generation'])")
expect_eq "generation after the apply that fits" "$((gen + 1))" "$gen2"
on_disk=$(lx "$REC_NODE" cat "$SD/accepted.json")
expect_eq "generation in the tmpfs's accepted.json" "$gen2" "$(json_get "$on_disk" "int(j['generation'])")"
lossless=$(rec_snapshot)
expect_eq "PFC after the apply that fits" "[False, False, False, True, False, False, False, False]" \
  "$(snap_get "$lossless" "j['pfc']['prio_pfc']")"
desired=$(json_get "$st" "json.dumps(j['config']['desired'], sort_keys=True)")

"$LAB" agent restart "$REC_NODE" >/dev/null || fail "agent restart failed"
st=$(rec_status)
expect_eq "generation after the restart" "$gen2" "$(json_get "$st" "int(j['config']['generation'])")"
expect_eq "desired config after the restart" "$desired" "$(json_get "$st" "json.dumps(j['config']['desired'], sort_keys=True)")"
expect_eq "config source after the restart" CONFIG_SOURCE_GRPC "$(json_get "$st" "j['config']['source']")"
rec_wait_state "$lossless" 15 "node after the restart" >/dev/null
pass "full: refused before touching the node; one page free: applied and undone; both 'could not be persisted', node and generation $gen kept; with space: generation $gen2, kept across a restart"
