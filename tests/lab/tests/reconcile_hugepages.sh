#!/usr/bin/env bash
# Hugepages: a request that fits is reserved (sysfs and /proc/meminfo read it
# back); a request beyond 90% of the node's memory (2 x 1 GiB on a 1 GiB
# guest: before the agent checked, the kernel reserved what it could and the
# apply was PARTIAL) is refused before anything changes, naming both figures
# from the guest's /proc/meminfo. (PARTIAL, a request within the bound the
# kernel cannot satisfy, is tested on the fake node in agent_reconcile_test:
# a guest made short of memory loses its exec runner to the OOM killer.)
source "$(dirname "$0")/reconcile_lib.sh"
H2=/sys/kernel/mm/hugepages/hugepages-2048kB/nr_hugepages
H1G=/sys/kernel/mm/hugepages/hugepages-1048576kB/nr_hugepages
rec_reset

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

# Beyond the node's memory: refused, nothing changes.
g1_before=0
lx "$REC_NODE" test -e $H1G && g1_before=$(lx "$REC_NODE" cat $H1G)
big=$( (cat "$small"; echo "  - {size: 1Gi, count: 2}") | cfg big)
if out=$(rctl apply -f "$big" 2>&1); then fail "2 x 1 GiB on a 1 GiB guest was accepted: $out"; fi
mem=$(lx "$REC_NODE" awk '/^MemTotal/ {print $2 * 1024}' /proc/meminfo)
grep -q "hugepages: the pools reserve 2164260864 bytes; allowed at most [0-9]* (90% of the node's $mem bytes of memory, MemTotal)" <<<"$out" ||
  fail "the refusal does not name the pools' bytes and the node's $mem: $out"
lx "$REC_NODE" test -e $H1G && expect_eq "1 GiB nr_hugepages after the refusal" "$g1_before" "$(lx "$REC_NODE" cat $H1G)"
expect_eq "2 MiB nr_hugepages after the refusal" 8 "$(lx "$REC_NODE" cat $H2)"

pass "8 x 2 MiB reserved; 2 x 1 GiB refused (over 90% of the guest's $mem bytes), nothing changed"
