#!/usr/bin/env bash
# Probe buffers go on hugepages when the config reserves them: node1's
# config plus `hugepages: [{size: 2Mi, count: 4}]` makes the initiator's
# buffer a 2 MiB page (bufferHugepages in the result, and the pool's free
# count dips while a bandwidth probe runs); without a pool the buffer is on
# normal pages. node1 gets the lab's config back afterwards.
source "$(dirname "$0")/probe_lib.sh"
probe_prepare node1 node2
HP=/sys/kernel/mm/hugepages/hugepages-2048kB
lab_cfg="$("$LAB" logdir node1)/roced.yaml"
tmp=$(mktemp -d)
restore() {
  pctl node1 apply -f "$lab_cfg" >/dev/null 2>&1 || true
  lsh node1 "echo 0 > $HP/nr_hugepages" >/dev/null 2>&1 || true
  rm -rf "$tmp"
}
trap restore EXIT

plain=$(pctl node1 -o json probe node2 --iterations 50) || fail "probe without hugepages failed: $plain"
expect_eq "bufferHugepages without a pool" False "$(json_get "$plain" "j.get('bufferHugepages', False)")"

{ cat "$lab_cfg"; printf 'hugepages:\n  - {size: 2Mi, count: 4}\n'; } >"$tmp/hp.yaml"
pctl node1 apply -f "$tmp/hp.yaml" >/dev/null || fail "apply of the lab config with 4 x 2 MiB hugepages failed"
expect_eq "2 MiB pages reserved" 4 "$(lx node1 cat $HP/nr_hugepages)"

pctl node1 -o json probe node2 --kind bandwidth --duration 4s >"$tmp/bw.json" 2>&1 &
bw=$!
min_free=4
for _ in $(seq 20); do
  sleep 0.3
  f=$(lx node1 cat $HP/free_hugepages) || break
  ((f < min_free)) && min_free=$f
  kill -0 "$bw" 2>/dev/null || break
done
wait "$bw" || fail "bandwidth probe with hugepages failed: $(cat "$tmp/bw.json")"
res=$(cat "$tmp/bw.json")
expect_eq "bandwidth probe success" True "$(json_get "$res" "j['success']")"
expect_eq "bufferHugepages with a 2Mi pool" True "$(json_get "$res" "j.get('bufferHugepages', False)")"
((min_free < 4)) || fail "free_hugepages never dropped below 4 during the probe"
lat=$(pctl node1 -o json probe node2 --iterations 50) || fail "latency probe with hugepages failed: $lat"
expect_eq "latency bufferHugepages" True "$(json_get "$lat" "j.get('bufferHugepages', False)")"
expect_eq "free 2 MiB pages after the probes" 4 "$(lx node1 cat $HP/free_hugepages)"
pass "buffer on a 2 MiB hugepage when the config reserves a pool (free pages 4 -> $min_free during the run, 4 after); normal pages without"
