#!/usr/bin/env bash
# Shared by the mesh tests on the shared lab (mesh_loss, mesh_rails): the
# three agents restarted with the mesh over an inventory of the three nodes
# under one ToR, put back without it, and their /metrics read from the lab
# namespace. Sourced after probe_lib.sh (NS, tmp set by the test).

# mesh_agents_on INVENTORY: writes the inventory and restarts every agent
# with --mesh-inventory.
mesh_agents_on() {
  local inventory=$1 i n
  for i in 1 2 3; do
    echo "node$i $("$LAB" addr "node$i"):7471 tor-lab pod-lab"
  done >"$inventory"
  for n in node1 node2 node3; do
    cp "$inventory" "$("$LAB" logdir "$n")/mesh.txt"
    echo "--mesh-inventory /lab/mesh.txt" >"$("$LAB" logdir "$n")/roced.args"
    "$LAB" agent restart "$n" >/dev/null || fail "$n: roced did not restart with the mesh"
  done
}

# mesh_agent_off NODE: the agent restarted without the mesh.
mesh_agent_off() {
  rm -f "$("$LAB" logdir "$1")/roced.args" "$("$LAB" logdir "$1")/mesh.txt"
  "$LAB" agent restart "$1" >/dev/null 2>&1 || true
}

mesh_scrape() {
  ip netns exec "$NS" "$PY" -c 'import sys, urllib.request
print(urllib.request.urlopen(f"http://{sys.argv[1]}:9471/metrics", timeout=20).read().decode())' "$("$LAB" addr "$1")"
}
