#!/usr/bin/env bash
# roced runs in every node: from the lab namespace, `rocectl status` answers
# for each node's gRPC address and the metrics endpoint serves Prometheus text.
source "$(dirname "$0")/lib.sh"
require_lab
((AGENT)) || skip "the lab was brought up without the agent (binaries not built: ${ROCED_BIN:-?})"
ns=$("$LAB" netns)
for ((i = 1; i <= NODES; i++)); do
  ip=$("$LAB" addr node$i)
  out=$(ip netns exec "$ns" "$ROCECTL_BIN" --target "$ip:7471" -o json status) ||
    fail "node$i: rocectl status failed"
  "$PY" -c 'import json,sys; json.loads(sys.stdin.read())' <<<"$out" ||
    fail "node$i: rocectl -o json status is not JSON: $out"
  metrics=$(ip netns exec "$ns" "$PY" -c '
import sys, urllib.request
print(urllib.request.urlopen(f"http://{sys.argv[1]}:9471/metrics", timeout=20).read().decode())' "$ip") ||
    fail "node$i: GET /metrics failed"
  grep -q "^# TYPE " <<<"$metrics" || fail "node$i: /metrics has no # TYPE lines"
  log "node$i ($ip): status OK, $(grep -vc '^#' <<<"$metrics") samples"
done
pass
