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
  # re-opens it at the device's uevent (else its next discovery pass, every
  # 60 s); allow 30 s.
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
  # The GIDs come from verbs (one ibv_query_gid_table call) while the
  # device is open: they must be what the gids/ and gid_attrs/ files say,
  # every populated slot with its type and netdev.
  # One grep reads every slot (rxe has 1024: a cat per slot is over a
  # thousand execs, which can take a saturated TCG guest past lsh's 120 s);
  # only the few populated slots are read further.
  sysfs_gids=$(lsh node$i 'p=/sys/class/infiniband/rxe0/ports/1
    grep -H . $p/gids/* | grep -v ":0000:0000:0000:0000:0000:0000:0000:0000\$" |
    while IFS= read -r line; do f=${line%%:*}; g=${line#*:}; i=${f##*/}
      read -r t 2>/dev/null < $p/gid_attrs/types/$i || continue
      read -r nd 2>/dev/null < $p/gid_attrs/ndevs/$i || nd=
      echo "$i $g $t $nd"
    done | sort -n') || fail "node$i: cannot read rxe0's GID files"
  agent_gids=$(STATUS_JSON="$out" "$PY" -c '
import json, os
s = json.loads(os.environ["STATUS_JSON"])
port = next(d for d in s["devices"] if d["name"] == "rxe0")["ports"][0]
names = {"GID_TYPE_ROCE_V2": "RoCE v2", "GID_TYPE_ROCE_V1": "IB/RoCE v1"}
for g in sorted(port["gids"], key=lambda g: g.get("index", 0)):
    print(g.get("index", 0), g["gid"], names.get(g["type"], g["type"]), g.get("netdev", ""))')
  [[ $agent_gids == "$sysfs_gids" ]] ||
    fail "node$i: the agent's GIDs differ from sysfs:"$'\n'"agent:"$'\n'"$agent_gids"$'\n'"sysfs:"$'\n'"$sysfs_gids"
  log "node$i: $(wc -l <<<"$agent_gids") GIDs, the same as sysfs's"

  metrics=$(ip netns exec "$ns" "$PY" -c '
import sys, urllib.request
print(urllib.request.urlopen(f"http://{sys.argv[1]}:9471/metrics", timeout=20).read().decode())' "$ip") ||
    fail "node$i: GET /metrics failed"
  grep -q "^# TYPE " <<<"$metrics" || fail "node$i: /metrics has no # TYPE lines"
  log "node$i ($ip): status OK, $(grep -vc '^#' <<<"$metrics") samples"
done
pass
