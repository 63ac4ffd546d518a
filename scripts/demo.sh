#!/usr/bin/env bash
# Sets up, builds and runs roced's main job on this machine (as root).
#
# With the QEMU lab available (tests/lab, /dev/net/tun, qemu), it boots two
# Soft-RoCE nodes, starts roced on each, prints `rocectl status` of both and
# keeps the lab up until interrupted. Without it (or with --fixture) it runs
# roced on the checked-in fixture sysfs tree and prints `rocectl status`.
#
# Options: --once     print the status and stop (do not wait for Ctrl-C)
#          --fixture  use the fixture tree even when the lab is available
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD

once=0
mode=auto
for arg in "$@"; do
  case "$arg" in
    --once) once=1 ;;
    --fixture) mode=fixture ;;
    --lab) mode=lab ;;
    -h|--help) sed -n '2,11p' "$0"; exit 0 ;;
    *) echo "demo.sh: unknown option $arg" >&2; exit 2 ;;
  esac
done

bash scripts/setup-deps.sh
cmake -S . -B build -G Ninja >/dev/null
cmake --build build -j"${JOBS:-2}" --target roced rocectl
BIN=$ROOT/build/bin

if [ "$mode" = auto ]; then
  if [ -x tests/lab/lab ] && [ -c /dev/net/tun ]; then mode=lab; else mode=fixture; fi
fi

if [ "$mode" = lab ]; then
  bash tests/lab/setup.sh
  LAB=$ROOT/tests/lab/lab
  cleanup() { "$LAB" down >/dev/null 2>&1 || true; }
  trap cleanup EXIT
  "$LAB" up --nodes 2
  NS=$("$LAB" netns)
  # The agents serve mutual TLS; the lab made the certificates and its state
  # file exports rocectl's (ROCECTL_CA/CERT/KEY, the lab-admin identity).
  # shellcheck source=/dev/null
  source "/run/${LAB_NAME:-roced-lab}/state"
  for node in node1 node2; do
    addr=$("$LAB" addr "$node")
    echo
    echo "=== rocectl --target $addr:7471 status   ($node)"
    ip netns exec "$NS" "$BIN/rocectl" --target "$addr:7471" status
  done
  # --once tears the lab down on exit: hints pointing at its agents would
  # name addresses nothing answers on any more.
  if [ "$once" = 1 ]; then
    echo
    echo "--once: taking the lab down. Run scripts/demo.sh without --once to keep it up and reach the agents."
    exit 0
  fi
  echo
  echo "Reach the agents from the lab namespace (mutual TLS as lab-admin):"
  echo "  export ROCECTL_CA=$ROCECTL_CA ROCECTL_CERT=$ROCECTL_CERT ROCECTL_KEY=$ROCECTL_KEY"
  for node in node1 node2; do
    addr=$("$LAB" addr "$node")
    echo "  ip netns exec $NS $BIN/rocectl --target $addr:7471 status"
    echo "  ip netns exec $NS curl -s http://$addr:9471/metrics"
  done
  echo "  $LAB exec node1 -- rdma link"
  echo
  echo "Lab is up; press Ctrl-C to tear it down."
  while sleep 3600; do :; done
fi

# Fixture mode: no RDMA hardware on this machine, so the agent reads a
# checked-in sysfs tree (two ConnectX-like NICs, one in a narrow slot, and a
# Soft-RoCE device) and the DCB state of its netdevs from files.
WORK=$(mktemp -d /tmp/roced-demo.XXXXXX)
"$BIN/roced" --sysfs-root tests/fixtures/sysfs --dcb-fixture tests/fixtures/dcb --config deploy/examples/minimal.yaml \
  --grpc-listen 127.0.0.1:7471 --insecure --metrics-listen 127.0.0.1:9471 \
  --socket "$WORK/roced.sock" --state-dir "$WORK/state" 2>"$WORK/roced.log" &
PID=$!
trap 'kill $PID 2>/dev/null; wait $PID 2>/dev/null; rm -rf "$WORK"' EXIT
# Until the agent answers and its first reconcile pass has read each port's QoS.
for _ in $(seq 1 100); do
  "$BIN/rocectl" --target 127.0.0.1:7471 --insecure --timeout 1s status 2>/dev/null | grep -q '^QoS as read' && break
  kill -0 $PID 2>/dev/null || { cat "$WORK/roced.log"; exit 1; }
  sleep 0.1
done
echo "=== rocectl --target 127.0.0.1:7471 --insecure status   (fixture sysfs tree, plaintext loopback demo)"
"$BIN/rocectl" --target 127.0.0.1:7471 --insecure status
if [ "$once" = 1 ]; then
  echo
  echo "--once: stopping the agent. Run scripts/demo.sh --fixture without --once to keep it running and try rocectl."
  exit 0
fi
echo
echo "roced is running (log: $WORK/roced.log). Try:"
echo "  $BIN/rocectl --target 127.0.0.1:7471 --insecure -o json status"
echo "  curl -s http://127.0.0.1:9471/metrics | grep ^roced_"
echo "Press Ctrl-C to stop."
wait $PID
