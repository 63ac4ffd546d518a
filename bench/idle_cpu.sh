#!/usr/bin/env bash
# Idle CPU of the agent, in the QEMU lab: what roced costs a node
# while nothing happens, thread by thread, against the guest's own idle.
#
# On node1 of a lab of IDLE_NODES nodes (default 2), in order:
#   1. the guest's idle baseline: roced stopped, IDLE_SECONDS (default 60)
#      of /proc/stat;
#   2. roced with the agent's default config (no peers, nothing scheduled;
#      node2's agent stopped, so nothing probes node1 either): IDLE_WARMUP
#      seconds (default 30) left alone, then IDLE_SECONDS measured: the
#      process's CPU time (utime + stime, which counts threads that ended
#      meanwhile), each live thread's run time
#      (/proc/PID/task/TID/schedstat, nanoseconds) and times scheduled in
#      (wakes/s) by name, and the guest's
#      busy time again. This is the idle figure; goal <= 0.5% of the vCPU;
#   3. the same with the lab's default config (node2 listed as a peer, a
#      100-iteration latency probe of it every 30 s, a 1 s bandwidth probe
#      every hour, node2's agent running and probing node1 alike): what a
#      node that probes costs, the probe workers under "threads that ended";
#   4. with IDLE_PFC=1 (default) the lab config again with PFC enabled on
#      priority 3 of eth0 (dcb pfc set), so the PFC watchdog polls it every
#      100 ms: the cost of a node that can storm;
#   5. with IDLE_MESH=1 (default) the agent's default config and the fleet
#      mesh on both nodes (--mesh-inventory: the two under one ToR, so each
#      probes the other at the default 10 probes/s and answers as many,
#      sizes, DSCPs and flow labels rotated): what the mesh costs per probe.
# The DCB test NIC starts without PFC. One emulated vCPU per guest (TCG), so
# "% of the vCPU" is of one CPU. Exit 0 when step 2 meets the goal, 1
# otherwise.
#
# Not a CI test. Uses the lab named $LAB_NAME (default roced-lab-idle) when
# it is up with IDLE_NODES nodes, else brings one up and takes it down
# after. Needs the build (build/bin/roced, rocectl).
#   bash bench/idle_cpu.sh            # IDLE_SECONDS=20 for a quick look
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LAB=$SRC/tests/lab/lab
export LAB_NAME=${LAB_NAME:-roced-lab-idle}
export ROCED_BIN=${ROCED_BIN:-$SRC/build/bin/roced} ROCECTL_BIN=${ROCECTL_BIN:-$SRC/build/bin/rocectl}
NODES=${IDLE_NODES:-2}
SECS=${IDLE_SECONDS:-60}
WARMUP=${IDLE_WARMUP:-30}
PFC=${IDLE_PFC:-1}
MESH=${IDLE_MESH:-1}
[[ -x $ROCED_BIN ]] || { echo "idle_cpu: no $ROCED_BIN (build first)" >&2; exit 2; }

OWN_LAB=0
if [[ -f /run/$LAB_NAME/state ]] && grep -qx "NODES=$NODES" "/run/$LAB_NAME/state"; then
  echo "idle_cpu: using the lab $LAB_NAME that is up"
else
  OWN_LAB=1
  "$LAB" up --nodes "$NODES" >/dev/null
fi
cleanup() {
  "$LAB" exec node1 -- sh -c 'dcb pfc set dev eth0 prio-pfc all:off' >/dev/null 2>&1 || true
  local n args
  for n in node1 node2; do
    args=$("$LAB" logdir "$n")/roced.args
    [[ -f $args ]] || continue
    rm -f "$args" "$("$LAB" logdir "$n")/mesh.txt"
    ((OWN_LAB)) || "$LAB" agent restart "$n" >/dev/null 2>&1 || true
  done
  ((OWN_LAB)) && "$LAB" down >/dev/null 2>&1 || true
}
trap cleanup EXIT

# The sampler, run in the guest: `sample PID|- SECS` prints one JSON line.
read -r -d '' SAMPLER <<'PY' || true
import json, os, sys, time
pid, secs = sys.argv[1], float(sys.argv[2])
hz = os.sysconf("SC_CLK_TCK")

def guest():
    f = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = f[3] + f[4]
    return sum(f) - idle, sum(f)

def proc():
    if pid == "-":
        return None, {}
    st = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    total = (int(st[11]) + int(st[12])) / hz  # utime, stime (exited threads included)
    threads = {}
    for tid in os.listdir(f"/proc/{pid}/task"):
        try:
            name = open(f"/proc/{pid}/task/{tid}/comm").read().strip()
            st = open(f"/proc/{pid}/task/{tid}/schedstat").read().split()
        except OSError:
            continue
        threads[tid] = (name, int(st[0]), int(st[2]))  # run ns, times scheduled in
    return total, threads

g0, p0, t_0 = guest(), proc(), time.monotonic()
time.sleep(secs)
g1, p1, t_1 = guest(), proc(), time.monotonic()
wall = t_1 - t_0
out = {"wall": wall, "guest_busy": (g1[0] - g0[0]) / max(1, g1[1] - g0[1])}
if pid != "-":
    out["process_cpu"] = p1[0] - p0[0]
    by_name = {}
    for tid, (name, ns, runs) in p1[1].items():
        _, ns0, runs0 = p0[1].get(tid, (name, 0, 0))
        e = by_name.setdefault(name, [0.0, 0, 0])
        e[0] += (ns - ns0) / 1e9
        e[1] += 1
        e[2] += runs - runs0
    out["threads"] = by_name
print(json.dumps(out))
PY

sample() {  # sample PID|- SECONDS
  "$LAB" exec -t $(($2 + 60)) node1 -- python3 -c "$SAMPLER" "$1" "$2"
}
roced_pid() { "$LAB" exec node1 -- pgrep -x roced; }

echo "date: $(date -u +%Y-%m-%dT%H:%MZ); host: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "guest: node1 of $NODES, $("$LAB" exec node1 -- uname -r), one TCG vCPU; $("$ROCED_BIN" --version | head -1)"

CFG=$("$LAB" logdir node1)/roced.yaml
cp "$CFG" "$CFG.lab"
restore_cfg() { if [[ -f $CFG.lab ]]; then mv -f "$CFG.lab" "$CFG"; fi; }
trap 'restore_cfg; cleanup' EXIT

echo "1. guest idle baseline: roced stopped, ${SECS} s"
"$LAB" agent stop node1 >/dev/null
base=$(sample - "$SECS")

echo "2. roced with the agent's default config (no peers; node2's agent stopped): ${WARMUP} s warm-up, ${SECS} s measured"
printf 'apiVersion: roced/v1\nkind: NodeConfig\n' >"$CFG"
"$LAB" agent stop node2 >/dev/null
"$LAB" agent start node1 >/dev/null
sleep "$WARMUP"
idle=$(sample "$(roced_pid)" "$SECS")

echo "3. roced with the lab's default config (probes every 30 s both ways): ${WARMUP} s warm-up, ${SECS} s measured"
restore_cfg
"$LAB" agent start node2 >/dev/null
"$LAB" agent restart node1 >/dev/null
sleep "$WARMUP"
lab=$(sample "$(roced_pid)" "$SECS")

pfc=
if [[ $PFC == 1 ]]; then
  echo "4. the lab config with PFC on priority 3 of eth0 (the watchdog polls it): ${WARMUP} s warm-up, ${SECS} s measured"
  "$LAB" exec node1 -- dcb pfc set dev eth0 prio-pfc 3:on
  sleep "$WARMUP"
  pfc=$(sample "$(roced_pid)" "$SECS")
  "$LAB" exec node1 -- dcb pfc set dev eth0 prio-pfc all:off
fi

mesh=
if [[ $MESH == 1 ]]; then
  echo "5. the default config with the mesh on node1 and node2 (10 probes/s each way): ${WARMUP} s warm-up, ${SECS} s measured"
  cp "$CFG" "$CFG.lab"
  printf 'apiVersion: roced/v1\nkind: NodeConfig\n' >"$CFG"
  for n in node1 node2; do
    for m in node1 node2; do echo "$m $("$LAB" addr "$m"):7471 tor-lab pod-lab"; done >"$("$LAB" logdir "$n")/mesh.txt"
    echo "--mesh-inventory /lab/mesh.txt" >"$("$LAB" logdir "$n")/roced.args"
    "$LAB" agent restart "$n" >/dev/null
  done
  sleep "$WARMUP"
  mesh=$(sample "$(roced_pid)" "$SECS")
fi

python3 - "$base" "$idle" "$lab" "${pfc:-}" "${mesh:-}" <<'PY'
import json, sys
base, idle, lab = (json.loads(a) for a in sys.argv[1:4])
pfc = json.loads(sys.argv[4]) if sys.argv[4] else None
mesh = json.loads(sys.argv[5]) if sys.argv[5] else None
GOAL = 0.5

def table(title, s):
    wall = s["wall"]
    print(f"\n{title} ({wall:.0f} s):")
    print(f"  {'thread':18} {'n':>3} {'CPU ms':>9} {'% vCPU':>8} {'wakes/s':>8}")
    rows = sorted(s["threads"].items(), key=lambda kv: -kv[1][0])
    live = 0.0
    for name, (cpu, n, runs) in rows:
        live += cpu
        if cpu * 1e3 >= 0.5:
            print(f"  {name:18} {n:3d} {cpu * 1e3:9.1f} {100 * cpu / wall:8.3f} {runs / wall:8.2f}")
    quiet = sum(1 for _, (cpu, _, _) in rows if cpu * 1e3 < 0.5)
    print(f"  ({quiet} more threads under 0.5 ms each)")
    ended = max(0.0, s["process_cpu"] - live)
    print(f"  {'threads that ended':18} {'':>3} {ended * 1e3:9.1f} {100 * ended / wall:8.3f}  (process utime+stime less the live threads; 10 ms ticks)")
    pct = 100 * s["process_cpu"] / wall
    print(f"  roced total: {s['process_cpu'] * 1e3:.0f} ms = {pct:.3f}% of the vCPU;"
          f" guest busy {100 * s['guest_busy']:.2f}% (idle baseline {100 * base['guest_busy']:.2f}%,"
          f" difference {100 * (s['guest_busy'] - base['guest_busy']):.2f} points)")
    return pct

print(f"\nguest idle baseline, roced stopped ({base['wall']:.0f} s): busy {100 * base['guest_busy']:.2f}% of the vCPU")
pct = table("roced idle: the agent's default config, nothing probing it", idle)
lab_pct = table("roced with the lab's default config: probes every 30 s to and from node2", lab)
p = table("the lab config with PFC on eth0 priority 3 (watchdog polling every 100 ms)", pfc) if pfc else None
m = table("the default config with the mesh: 10 probes/s to node2 and 10/s answered", mesh) if mesh else None
print(f"\nroced idle (default config): {pct:.3f}% of the vCPU (goal <= {GOAL}%: {'met' if pct <= GOAL else 'NOT met'})")
print(f"roced with the lab's probes: {lab_pct:.3f}%" + (f"; with one PFC priority watched: {p:.3f}%" if p else ""))
if m:
    print(f"roced with the mesh at its default rate to one ToR mate (20 probes/s sent or answered): {m:.3f}%")
sys.exit(0 if pct <= GOAL else 1)
PY
