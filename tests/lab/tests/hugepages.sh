#!/usr/bin/env bash
# Hugepages in a guest: nr_hugepages is writable and reads back what the
# kernel reserved (globally, per size, per NUMA node); hugetlbfs pages can be
# used; a request the guest cannot satisfy reads back what was reserved.
source "$(dirname "$0")/lib.sh"
require_lab
H=/sys/kernel/mm/hugepages/hugepages-2048kB

lsh node2 "echo 0 > /proc/sys/vm/nr_hugepages"
lsh node2 "echo 16 > /proc/sys/vm/nr_hugepages"
expect_eq "nr_hugepages" 16 "$(lx node2 cat /proc/sys/vm/nr_hugepages)"
expect_eq "hugepages-2048kB/nr_hugepages" 16 "$(lx node2 cat $H/nr_hugepages)"
expect_eq "HugePages_Total" 16 "$(lx node2 awk '/^HugePages_Total/ {print $2}' /proc/meminfo)"
expect_eq "node0 nr_hugepages" 16 "$(lx node2 cat /sys/devices/system/node/node0/hugepages/hugepages-2048kB/nr_hugepages)"
free=$(lsh node2 "fallocate -l 8M /dev/hugepages/lab-test && awk '/^HugePages_Free/ {print \$2}' /proc/meminfo; rm -f /dev/hugepages/lab-test")
expect_eq "HugePages_Free with 8 MiB in hugetlbfs" 12 "$free"
# Two 1 GiB pages on a 1 GiB guest cannot be reserved: the read-back tells.
G=/sys/kernel/mm/hugepages/hugepages-1048576kB
# The lab's vCPU (-cpu max) has pdpe1gb, so the guest has a 1 GiB pool; a
# guest without one cannot show this, which is a skip (a failure in CI).
lx node2 test -d $G || skip "16 x 2 MiB read back, but node2 has no 1 GiB hugepage pool ($G): the over-ask is not tested"
got=$(lsh node2 "echo 2 > $G/nr_hugepages || true; cat $G/nr_hugepages; echo 0 > $G/nr_hugepages")
((got < 2)) || fail "2 x 1 GiB pages on a 1 GiB guest: read back $got"
pass "16 x 2 MiB read back; 2 x 1 GiB requested, $got reserved"
