#!/usr/bin/env bash
# Hugepages: a request that fits is reserved (sysfs and /proc/meminfo read it
# back); a 1 GiB request the 1 GiB guest cannot hold is reported PARTIAL with
# wanted and reserved counts, the field stays FAILED (not converged) on later
# passes, and the 2 MiB pool is kept.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset
H2=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
H1G=/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages

small=$(cfg small <<'EOF2'
apiVersion: roced/v1
kind: NodeConfig
hugepages:
  - {size: 2Mi, count: 8}
EOF2
)
out=$(rctl apply -f "$small") || fail "apply of 8 x 2 MiB failed: $out"
grep -A4 "hugepages-2048kB hugepages.count" <<<"$out" | grep -q "= applied" || fail "no applied 2 MiB step:
$out"
expect_eq "2 MiB nr_hugepages" 8 "$(lx "$REC_NODE" cat $H2)"
expect_eq "HugePages_Total" 8 "$(lx "$REC_NODE" awk '/^HugePages_Total/ {print $2}' /proc/meminfo)"

# The lab's guests have a 1 GiB pool (QEMU's `-cpu max` has pdpe1gb, and the
# kernel registers the gigantic size at boot); without one the PARTIAL case
# below cannot be shown, and that is a skip (a failure in CI), not a pass.
lx "$REC_NODE" test -e $H1G ||
  skip "8 x 2 MiB reserved, but this guest has no 1 GiB hugepage pool ($H1G): the PARTIAL case is not tested (does the vCPU lack pdpe1gb?)"
big=$( (cat "$small"; echo "  - {size: 1Gi, count: 2}") | cfg big)
out=$(rctl apply -f "$big") || fail "apply with 2 x 1 GiB failed outright (want PARTIAL, exit 0): $out"
got=$(lx "$REC_NODE" cat $H1G)
((got < 2)) || fail "2 x 1 GiB pages on a 1 GiB guest: the kernel reserved $got"
grep -q "= PARTIAL: wanted 2 pages, the kernel reserved $got\$" <<<"$out" || fail "no PARTIAL with wanted/reserved counts:
$out"

# A later pass (forced with a DCB notification) still says so.
noop0=$(rec_metric 'roced_reconcile_runs_total{result="noop"}')
lx "$REC_NODE" dcb pfc set dev eth0 prio-pfc 0:off
deadline=$((SECONDS + 15))
until [[ $(rec_metric 'roced_reconcile_runs_total{result="noop"}') != "$noop0" ]]; do
  ((SECONDS < deadline)) || fail "no reconcile pass after a DCB notification"
  sleep 0.3
done
st=$(rec_status)
expect_eq "status 1 GiB pool" FIELD_SYNC_FAILED "$(rec_field_sync "$st" hugepages-1048576kB hugepages.count)"
msg=$(json_get "$st" "next(f.get('message', '') for f in j['fields'] if f['object'] == 'hugepages-1048576kB')")
[[ $msg == "wanted 2 pages, the kernel reserved $got"* ]] || fail "1 GiB field message: '$msg'"
expect_eq "converged" False "$(json_get "$st" "j['config'].get('converged', False)")"
expect_eq "roced_converged" 0 "$(rec_metric roced_converged)"
expect_eq "status 2 MiB pool" FIELD_SYNC_IN_SYNC "$(rec_field_sync "$st" hugepages-2048kB hugepages.count)"
expect_eq "2 MiB nr_hugepages" 8 "$(lx "$REC_NODE" cat $H2)"
pass "8 x 2 MiB reserved; 2 x 1 GiB PARTIAL ($got reserved), reported as not converged"
