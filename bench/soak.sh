#!/usr/bin/env bash
# Soak: the agent under steady load with faults, in the QEMU lab,
# for SOAK_MINUTES (default 30) on SOAK_NODES nodes (default 3, at least 3):
#   - scheduled latency probes every second between every pair of nodes
#     (each agent probes every other node: LAB_PROBE_LATENCY_INTERVAL=1s,
#     SOAK_PROBE_ITERATIONS ping-pongs each, default 20, for one emulated
#     vCPU per guest);
#   - a scrape of every node's /metrics every second;
#   - an ApplyConfig to every node every 10 s, alternating two QoS configs
#     (PFC and DSCP 26 on priority 3, then 4; the lab's probe peers kept);
#   - a WatchState client per node (rocectl events --for 60s) that
#     reconnects every minute;
#   - one fault every SOAK_FAULT_EVERY seconds (default 300), the first half
#     a period in, taken in turn from: link cut, peer agent restarting in a
#     loop, rxe removed and re-added, agent SIGSTOPped past its deadlines,
#     packet loss, the DCB test NIC module reloaded.
# It reports per node, at start and at end: open fds, threads, queue pairs
# and memory regions the agent holds (rdma res), RSS and anonymous memory;
# and every failed probe (from roced_probe_failures_total, scraped every
# second) by peer and reason, inside or outside a fault window (the fault
# and SOAK_GRACE seconds after it, default 45). Goals: no growth in fds,
# threads, QPs, MRs; RSS at most +5%; no failed probe outside the fault
# windows. Exit 0 when every goal is met, 1 otherwise.
#
# Not a CI test (30 minutes). Uses the lab named $LAB_NAME (default
# roced-lab-soak) when it is up with SOAK_NODES nodes, else brings one up
# and takes it down after. Needs the build (build/bin/roced, rocectl).
# The start figures are taken after SOAK_WARMUP seconds (default 120) of the
# full load, the end figures when the load stops.
#   bash bench/soak.sh            # SOAK_MINUTES=3 for a quick run
# Output: the table on stdout, everything (samples, faults, failures, the
# timeline) as JSON in SOAK_OUT (default /tmp/roced-soak-<time>.json).
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB=$SRC/tests/lab/lab
export LAB_NAME=${LAB_NAME:-roced-lab-soak}
NODES=${SOAK_NODES:-3}
((NODES >= 3)) || { echo "soak: SOAK_NODES must be at least 3" >&2; exit 2; }
export SOAK_OUT=${SOAK_OUT:-/tmp/roced-soak-$(date -u +%Y%m%dT%H%M%SZ).json}

OWN_LAB=0
if [[ -f /run/$LAB_NAME/state ]] && grep -qx "NODES=$NODES" "/run/$LAB_NAME/state"; then
  echo "soak: using the lab $LAB_NAME that is up"
else
  OWN_LAB=1
  LAB_PROBE_LATENCY_INTERVAL=1s LAB_PROBE_LATENCY_ITERATIONS=${SOAK_PROBE_ITERATIONS:-20} \
    "$LAB" up --nodes "$NODES"
fi
cleanup() { ((OWN_LAB)) && "$LAB" down >/dev/null 2>&1 || true; }
trap cleanup EXIT
# shellcheck source=/dev/null
source "/run/$LAB_NAME/state"
export ROCECTL_BIN NODES LAB
rc=0
python3 "$SRC/bench/soak.py" || rc=$?
echo "soak: details in $SOAK_OUT"
exit "$rc"
