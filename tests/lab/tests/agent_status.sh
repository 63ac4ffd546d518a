#!/usr/bin/env bash
# roced runs in every node: from the lab namespace, `rocectl status` answers
# for each node's gRPC address and the metrics endpoint serves Prometheus text.
source "$(dirname "$0")/lib.sh"
require_lab
((AGENT)) || skip "the lab was brought up without the agent (binaries not built: ${ROCED_BIN:-?})"
ns=$("$LAB" netns)
for ((i = 1; i <= NODES; i++)); do
  ip=$("$LAB" addr node$i)
  # A test before this one may have removed and re-added rxe0: the agent
  # re-opens it on its next discovery pass (every 10 s), so allow 30 s.
  for ((try = 0; try < 30; try++)); do
    out=$(ip netns exec "$ns" "$ROCECTL_BIN" --target "$ip:7471" -o json status) ||
      fail "node$i: rocectl status failed"
    grep -q '"verbsOpen": true' <<<"$out" && break
    sleep 1
  done
  # Discovery and verbs on a real kernel: rxe0 on eth0, its verbs context held
  # open, port ACTIVE with the active MTU verbs reports (1024 for a 1500-byte
  # netdev), and a RoCE v2 GID carrying the node's lab address.
  check=$(STATUS_JSON="$out" "$PY" - "$ip" 2>&1 <<'PY'
import json, os, sys
ip = sys.argv[1]
s = json.loads(os.environ["STATUS_JSON"])
dev = next((d for d in s["devices"] if d["name"] == "rxe0"), None)
assert dev, "rxe0 not discovered: %s" % [d["name"] for d in s["devices"]]
assert dev["verbsOpen"] is True, "verbs context not open"
assert dev["driver"] == "rdma_rxe" and dev["parentNetdev"] == "eth0", dev
port = dev["ports"][0]
assert port["state"] == "PORT_STATE_ACTIVE", port["state"]
assert port["netdev"] == "eth0" and port["activeMtu"] == 1024, (port["netdev"], port["activeMtu"])
v2 = [g for g in port["gids"] if g["type"] == "GID_TYPE_ROCE_V2" and g["ipAddress"] == ip]
assert v2, "no RoCE v2 GID for %s: %s" % (ip, port["gids"])
print("rxe0 ok: gid index %d" % v2[0]["index"])
PY
) || fail "node$i: $check"
  log "node$i: $check"
  metrics=$(ip netns exec "$ns" "$PY" -c '
import sys, urllib.request
print(urllib.request.urlopen(f"http://{sys.argv[1]}:9471/metrics", timeout=20).read().decode())' "$ip") ||
    fail "node$i: GET /metrics failed"
  grep -q "^# TYPE " <<<"$metrics" || fail "node$i: /metrics has no # TYPE lines"
  log "node$i ($ip): status OK, $(grep -vc '^#' <<<"$metrics") samples"
done
pass
