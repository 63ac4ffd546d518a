#!/usr/bin/env bash
# Hugepages in a guest: nr_hugepages is writable and reads back what the
# kernel reserved (globally and per size); hugetlbfs pages can be used; a
# request larger than the guest's memory is only partly satisfied.
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
# 1 GiB of 2 MiB pages on a 1 GiB guest: partly satisfied; put it back at once.
got=$(lsh node2 "echo 512 > $H/nr_hugepages; cat $H/nr_hugepages; echo 0 > $H/nr_hugepages")
((got > 16 && got < 512)) || fail "over-sized request: want a partial reservation (16 < n < 512), got $got"
expect_eq "nr_hugepages after release" 0 "$(lx node2 cat $H/nr_hugepages)"
pass "16 pages read back; 512 requested on a 1 GiB guest gave $got"
