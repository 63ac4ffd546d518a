#!/usr/bin/env bash
# Shared by the mesh tests on the shared lab (mesh_loss, mesh_rails): the
# three agents restarted with the mesh over an inventory of the three nodes
# under one ToR, put back without it, and their /metrics read from the lab
# namespace. Sourced after probe_lib.sh (NS, tmp set by the test).

# mesh_agents_on INVENTORY: writes the inventory and restarts every agent
# with --mesh-inventory (and --mesh-window MESH_WINDOW seconds when the
# test sets it; else the default 60 s), the three at once (each restart
# waits for its agent to answer). MESH_AGENTS_UP: when they were up
# ($SECONDS).
mesh_agents_on() {
  local inventory=$1 i n
  for i in 1 2 3; do
    echo "node$i $("$LAB" addr "node$i"):7471 tor-lab pod-lab"
  done >"$inventory"
  for n in node1 node2 node3; do
    cp "$inventory" "$("$LAB" logdir "$n")/mesh.txt"
    echo "--mesh-inventory /lab/mesh.txt${MESH_WINDOW:+ --mesh-window ${MESH_WINDOW}s}" >"$("$LAB" logdir "$n")/roced.args"
  done
  mesh_restart_all || fail "$MESH_RESTART_FAILED: roced did not restart with the mesh"
  MESH_AGENTS_UP=$SECONDS
}

# mesh_await_window: waits until the agents are older than their window
# (2 s to spare): within it an agent says its host is busy (it just
# started), and `rocectl mesh` would name the host, not its RNIC.
mesh_await_window() {
  local left=$((MESH_AGENTS_UP + ${MESH_WINDOW:-60} + 2 - SECONDS))
  ((left <= 0)) || sleep "$left"
}

# mesh_restart_all: `lab agent restart` of the three nodes at once; fails
# naming the first node whose agent did not come back (MESH_RESTART_FAILED).
mesh_restart_all() {
  local n pids=() rc=0
  for n in node1 node2 node3; do
    "$LAB" agent restart "$n" >/dev/null 2>&1 &
    pids+=($!)
  done
  MESH_RESTART_FAILED=""
  for n in 1 2 3; do
    wait "${pids[$((n - 1))]}" && continue
    rc=1
    MESH_RESTART_FAILED=${MESH_RESTART_FAILED:-node$n}
  done
  return "$rc"
}

# mesh_agents_off: the three agents restarted without the mesh, at once.
mesh_agents_off() {
  local n
  for n in node1 node2 node3; do
    rm -f "$("$LAB" logdir "$n")/roced.args" "$("$LAB" logdir "$n")/mesh.txt"
  done
  mesh_restart_all || true
}

# mesh_counts NODE PEER: "SENT LOST", NODE's settled mesh probes of PEER
# (sums over every series of that peer).
mesh_counts() {
  mesh_scrape "$1" | "$PY" -c '
import re, sys
peer = sys.argv[1]
t = {"roced_mesh_probes_sent_total": 0.0, "roced_mesh_probes_lost_total": 0.0}
for line in sys.stdin:
    m = re.match(r"^(\w+)\{([^}]*)\} (\S+)$", line.strip())
    if m and m.group(1) in t and f"peer=\"{peer}\"" in m.group(2):
        t[m.group(1)] += float(m.group(3))
print(int(t["roced_mesh_probes_sent_total"]), int(t["roced_mesh_probes_lost_total"]))' "$2"
}

# mesh_wait_sent NODE PEER COUNT SECS: waits (polling every 0.5 s) until
# NODE has settled at least COUNT probes of PEER in all, at most SECS;
# prints "SENT LOST" as last read, and fails (status 1) at the deadline.
# A window of N probes, not of N seconds: the probes settle at their own
# pace under TCG.
mesh_wait_sent() {
  local deadline=$((SECONDS + $4)) s=0 l=0
  while :; do
    read -r s l <<<"$(mesh_counts "$1" "$2" 2>/dev/null || echo "0 0")"
    ((s >= $3)) && { echo "$s $l"; return 0; }
    ((SECONDS < deadline)) || { echo "$s $l"; return 1; }
    sleep 0.5
  done
}

mesh_scrape() {
  ip netns exec "$NS" "$PY" -c 'import sys, urllib.request
print(urllib.request.urlopen(f"http://{sys.argv[1]}:9471/metrics", timeout=20).read().decode())' "$("$LAB" addr "$1")"
}
