#!/usr/bin/env bash
# `lab exec` passes stdout, stderr and the exit status through (128+N for a
# signal, 124 on -t timeout, 127 for a missing command), forwards stdin with
# -i byte for byte, and `lab addr` / `lab netns` answer.
source "$(dirname "$0")/lib.sh"
require_lab

out=$("$LAB" exec node1 -- sh -c 'echo to-out; echo to-err >&2; exit 3' 2>/tmp/lab_exec_err.$$) && rc=0 || rc=$?
err=$(cat /tmp/lab_exec_err.$$); rm -f /tmp/lab_exec_err.$$
expect_eq "stdout" "to-out" "$out"
expect_eq "stderr" "to-err" "$err"
expect_eq "exit status" 3 "$rc"
"$LAB" exec node2 -- true || fail "true failed"
rc=0; "$LAB" exec node1 -- sh -c 'kill -TERM $$' || rc=$?
expect_eq "status of a command killed by SIGTERM" 143 "$rc"
rc=0; "$LAB" exec node1 -- no-such-command-xyz 2>/dev/null || rc=$?
expect_eq "status of a missing command" 127 "$rc"
start=$(date +%s)
rc=0; "$LAB" exec -t 2 node1 -- sleep 30 2>/dev/null || rc=$?
expect_eq "status after -t 2" 124 "$rc"
(($(date +%s) - start < 15)) || fail "-t 2 took $(($(date +%s) - start)) s"
# stdin, binary-safe
want=$(head -c 300000 /dev/urandom | tee /tmp/lab_exec_in.$$ | sha256sum | cut -d' ' -f1)
got=$("$LAB" exec -i node2 -- sha256sum </tmp/lab_exec_in.$$ | cut -d' ' -f1)
rm -f /tmp/lab_exec_in.$$
expect_eq "sha256 of 300 kB through stdin" "$want" "$got"
# large stdout
n=$("$LAB" exec node1 -- head -c 2000000 /dev/zero | wc -c)
expect_eq "bytes of stdout" 2000000 "$n"
expect_eq "hostname" node2 "$("$LAB" exec node2 -- hostname)"
expect_eq "lab addr node1" 192.168.77.11 "$("$LAB" addr node1)"
expect_eq "lab addr node2" 192.168.77.12 "$("$LAB" addr node2)"
expect_eq "lab netns" "$LAB_NAME" "$("$LAB" netns)"
if "$LAB" exec node9 -- true 2>/dev/null; then fail "exec on node9 succeeded"; fi
# the namespace reaches the nodes' lab addresses
ip netns exec "$("$LAB" netns)" ping -c 1 -W 5 "$("$LAB" addr node2)" >/dev/null || fail "netns cannot ping node2"
pass
