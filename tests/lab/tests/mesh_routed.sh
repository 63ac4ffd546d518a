#!/usr/bin/env bash
# The fleet mesh's acceptance test in the routed lab: six nodes under
# three ToRs (two hosts each), every ToR joined to two spines with ECMP, so
# RoCE v2 crosses layer 3 as in production. Every agent runs the mesh at the
# default rates (10/s under the ToR, 1/s across) over DSCPs 26 and 0, with
# a 20 s window. Four faults, one at a time; for each, `rocectl mesh
# --targets` over the six agents must name the right component as its first
# suspect within 30 s, and no suspect once it is cleared (a window later):
#   1. 20% loss on the link tor1 - spine1 (a ToR port) -> tor_uplinks tor1
#   2. 20% loss on node3's link (its RNIC)            -> rnic node3
#   3. spine1 drops RoCE packets of 1 KiB and more     -> fabric (or the
#      uplinks of the ToR whose pairs ECMP put on spine1), size 1024
#   4. spine2 drops DSCP 26                            -> the same, DSCP 26
# A real Prometheus scrapes the six agents with the shipped mesh rules: the
# ToR-pair loss alert must fire for tor1 and tor2 during fault 2, and
# `rocectl mesh --prometheus` over its series must name each of the four too.
# Then two more, judged from the agents' own views only (the Prometheus
# view has no history, and a starved agent's scrapes come late), each
# cleared until no suspect is left (60 s at most):
#   5. 0.5% loss on every node's link, left on for 30 s (a window and
#      three slots: the agents' histories hold it), then 10% on node6's:
#      `rocectl mesh` names rnic node6 and nothing else within 60 s. About
#      90 s (at most 165).
#   6. node5 starved of CPU in its guest (a SCHED_FIFO busy loop per vCPU;
#      the kernel leaves the rest 5% of each second): the first suspect is
#      host node5 (its agent says why: CPU pressure, a stalled loop) within
#      60 s. About 60 s (at most 130).
# Its own lab (LAB_NAME roced-lab-routed), brought up and down here.
export LAB_NAME=roced-lab-routed
export LAB_RUN=/run/$LAB_NAME
source "$(dirname "$0")/lib.sh"
why=$(lab_preflight_reason)
[[ -z $why ]] || skip "$why"
[[ -x ${ROCED_BIN:-} && -x ${ROCECTL_BIN:-} ]] || skip "the agent binaries are not built (${ROCED_BIN:-roced})"

"$LAB" down >/dev/null 2>&1 || true
trap '"$LAB" down >/dev/null 2>&1 || true' EXIT
# Six emulated guests on this machine: the agents' scheduled RC probes
# (every 30 s to each of five peers in the shared lab's config) are turned
# down so that the mesh, not them, is what runs; agents are started once,
# with the mesh flags, after the guests are up.
LAB_PROBE_LATENCY_INTERVAL=1h "$LAB" up --nodes 6 --tors 3 --mem 512 --ttl 1500 --no-agent >/dev/null ||
  fail "lab up --nodes 6 --tors 3 failed"
# shellcheck source=/dev/null
source "$LAB_RUN/state"
NS=$("$LAB" netns)
declare -a spine_rx
tmp=$(mktemp -d "/tmp/$TEST_NAME.XXXXXX")
inventory=$tmp/inventory.txt
for i in 1 2 3 4 5 6; do
  echo "node$i $("$LAB" addr "node$i"):7471 tor$(((i - 1) % 3 + 1)) pod1"
done >"$inventory"
for i in 1 2 3 4 5 6; do
  cp "$inventory" "$("$LAB" logdir "node$i")/mesh.txt"
  echo "--mesh-inventory /lab/mesh.txt --mesh-window 20s --mesh-dscps 26,0" >"$("$LAB" logdir "node$i")/roced.args"
  "$LAB" agent start "node$i" >/dev/null || fail "node$i: roced did not start with the mesh"
done
# Probes sent before every agent answered may have gone to one not yet up:
# the first window after the last start can hold their losses.
agents_up=$SECONDS

mesh() { ip netns exec "$NS" "$ROCECTL_BIN" --timeout 20s -o json mesh --targets "$inventory" 2>/dev/null; }
mesh_prometheus() {
  ip netns exec "$NS" "$ROCECTL_BIN" --timeout 10s -o json mesh --prometheus http://127.0.0.1:9090 --window 30s 2>/dev/null
}
# first_suspect: "KIND COMPONENT SIZE DSCP" of the first suspect ("none").
# SUSPECT_OF=prometheus: from mesh_prometheus. ALL_SUSPECTS=1: every
# suspect, "; "-joined.
first_suspect() {
  local out
  if [[ ${SUSPECT_OF:-} == prometheus ]]; then out=$(mesh_prometheus) || true; else out=$(mesh) || true; fi
  "$PY" -c '
import json, sys
try:
    j = json.loads(sys.argv[1])
except ValueError:
    print("error"); sys.exit()
s = j.get("suspects") or []
if not s: print("none"); sys.exit()
line = lambda f: " ".join(str(v) for v in (f.get("kind"), f.get("component") or "-",
                                            f.get("sizeBytes", f.get("size_bytes", "-")), f.get("dscp", "-")))
print("; ".join(line(f) for f in (s if sys.argv[2] == "1" else s[:1])))' "$out" "${ALL_SUSPECTS:-0}"
}
# matches GOT WANT: GOT starts with WANT, or, for a WANT of "~REGEX",
# matches it.
matches() { if [[ $2 == "~"* ]]; then [[ $1 =~ ${2#\~} ]]; else [[ $1 == "$2"* ]]; fi; }
# wait_for WANT SECONDS: polls until the first suspect matches WANT.
wait_for() {
  local want=$1 limit=$2 t0 got
  t0=$(date +%s)
  while (($(date +%s) - t0 <= limit)); do
    got=$(first_suspect)
    matches "$got" "$want" && { echo $(($(date +%s) - t0)); return 0; }
    sleep 2
  done
  echo "last: $got"
  return 1
}

# A real Prometheus in the lab namespace scraping every node with the
# shipped mesh rules (scrape and evaluation every 5 s).
prom_pid=""
if command -v prometheus >/dev/null; then
  targets=()
  for i in 1 2 3 4 5 6; do targets+=("\"$("$LAB" addr "node$i"):9471\""); done
  cat >"$tmp/prometheus.yml" <<EOF
global: {scrape_interval: 5s, evaluation_interval: 5s}
rule_files: ["$(cd "$TESTS_DIR/../../.." && pwd)/deploy/prometheus/roced-mesh.rules.yml"]
scrape_configs:
  - job_name: roced
    scrape_timeout: 4s
    static_configs: [{targets: [$(IFS=,; echo "${targets[*]}")]}]
EOF
  ip netns exec "$NS" prometheus --config.file="$tmp/prometheus.yml" --storage.tsdb.path="$tmp/data" \
    --web.listen-address=127.0.0.1:9090 --log.level=warn >"$tmp/prometheus.log" 2>&1 &
  prom_pid=$!
  trap 'kill $prom_pid 2>/dev/null; "$LAB" down >/dev/null 2>&1 || true' EXIT
fi
# firing ALERT: the label sets of ALERT's firing alerts, one a line.
firing() {
  ip netns exec "$NS" "$PY" -c 'import json, sys, urllib.request
r = json.load(urllib.request.urlopen("http://127.0.0.1:9090/api/v1/alerts", timeout=5))
for a in r["data"]["alerts"]:
    if a["labels"].get("alertname") == sys.argv[1] and a["state"] == "firing":
        print(" ".join(f"{k}={v}" for k, v in sorted(a["labels"].items())))' "$1" 2>/dev/null
}
alert_seen=""
# During the uplink fault: the ToR-pair loss alert fires for tor1 and tor2
# (either way).
await_tor_pair_alert() {
  [[ -n $prom_pid ]] || { log "no prometheus installed: alert not checked"; return 0; }
  local t0=$SECONDS got
  while ((SECONDS - t0 < 150)); do
    got=$(firing RocedMeshTorPairLoss |
      grep -E '(^| )peer_tor=tor2( .*)? tor=tor1( |$)|(^| )peer_tor=tor1( .*)? tor=tor2( |$)' | head -n 1) || true
    [[ -n $got ]] && { alert_seen="RocedMeshTorPairLoss firing after $((SECONDS - t0)) s more ($got)"; log "$alert_seen"; return 0; }
    sleep 5
  done
  fail "RocedMeshTorPairLoss did not fire for tor1 and tor2 within 150 s of the suspect being named: $(firing RocedMeshTorPairLoss)"
}

# Healthy first: every agent answering with a full window of probes (500
# between them, and the 20 s window all after the last agent started), no
# suspect, and both spines carrying tor1's traffic. A suspect may stand
# while the window still holds probes to agents that were starting; it must
# be gone one window later.
t0=$SECONDS
while :; do
  out=$(mesh) || true
  read -r answered sent <<<"$("$PY" -c 'import json, sys
try:
    j = json.loads(sys.argv[1]); print(j.get("agentsAnswered", 0), int(j.get("sent", 0)))
except ValueError:
    print(0, 0)' "$out")"
  ((answered == 6 && sent >= 500 && SECONDS - agents_up >= 22)) && break
  ((SECONDS - t0 < 120)) || fail "after 120 s, $answered of 6 agents answered with $sent probes: ${out:0:600}"
  sleep 2
done
healthy=$(wait_for none 22) || fail "the healthy routed lab still has a suspect a full window after every agent started: $healthy; $(mesh | head -c 600)"
for s in 1 2; do
  rx=$(ip netns exec "$NS-spine$s" cat /sys/class/net/dn1/statistics/rx_packets)
  ((rx > 50)) || fail "spine$s carried $rx packets from tor1: ECMP sends nothing its way"
  spine_rx[$s]=$rx
done
log "healthy after $((SECONDS - t0)) s: $sent probes, no suspect; tor1 sent ${spine_rx[1]} packets via spine1, ${spine_rx[2]} via spine2"

# The same suspect from the lab's Prometheus (rocectl mesh --prometheus:
# the agents' recorded series over a 30 s window, far ends known by their
# ToR only), within 60 s of the agents' own view naming it.
declare -A prom_took
prom_view() { # NAME WANT
  [[ -n $prom_pid ]] || return 0
  local name=$1 want=$2 t0=$SECONDS got=""
  while ((SECONDS - t0 <= 60)); do
    got=$(SUSPECT_OF=prometheus first_suspect)
    matches "$got" "$want" && { prom_took[$name]=$((SECONDS - t0)); return 0; }
    sleep 3
  done
  eval "$clear" >/dev/null 2>&1 || true
  fail "$name: rocectl mesh --prometheus did not name '$want' within 60 s (last: $got); $(mesh_prometheus | head -c 600)"
}

declare -A took
fault() { # NAME WANT INJECT CLEAR [WHILE_ON]
  local name=$1 want=$2 inject=$3 clear=$4 while_on=${5:-true} t
  eval "$inject" >/dev/null || fail "$name: could not inject ($inject)"
  if ! t=$(wait_for "$want" 30); then
    eval "$clear" >/dev/null 2>&1 || true
    fail "$name: rocectl mesh did not name '$want' within 30 s ($t); $(mesh | head -c 600)"
  fi
  took[$name]=$t
  prom_view "$name" "$want"
  eval "$while_on"
  eval "$clear" >/dev/null || fail "$name: could not clear"
  t=$(wait_for none 60) || fail "$name cleared: a suspect stays ($t)"
  log "$name: '$want' named after ${took[$name]} s; cleared after $t s"
}
# The uplink first: its peers are one ToR pair's few probes, and a fault
# just before in their history (node3's, under tor3) would weigh in the
# test against them.
fault "tor1-spine1 loss" "tor_uplinks tor1" '"$LAB" fault uplink 1 1 loss 20%' '"$LAB" fault uplink 1 1 clear' await_tor_pair_alert
fault "node3 RNIC loss" "rnic node3" '"$LAB" netem node3 loss 20%' '"$LAB" netem node3 clear'
# A spine's class drop is named with its class. Which scope holds it is
# ECMP's choice in a lab of three ToRs: the probes of one ToR pair can all
# hash onto the other spine (measured once: tor2-tor3 lost 5 of 47 1 KiB
# probes while tor1's pairs lost 70 of 92), and then the fabric's losses
# are one ToR's uplinks', which is what the localizer names.
fault "spine1 drops >= 1 KiB" "~^(fabric -|tor_uplinks tor[123]) 1024 -" \
  '"$LAB" fault spine 1 drop-large' '"$LAB" fault spine 1 clear'
fault "spine2 drops DSCP 26" "~^(fabric -|tor_uplinks tor[123]) - 26" \
  '"$LAB" fault spine 2 drop-dscp 26' '"$LAB" fault spine 2 clear'

# 5. Background loss everywhere, then one RNIC's loss on top: judged
# against its peers now and its history, the RNIC is named and nothing
# else. node6: the faults above left little in its history.
netem_all() { # SPEC...: on every node's link
  local i
  for i in 1 2 3 4 5 6; do "$LAB" netem "node$i" "$@" >/dev/null || return 1; done
}
t0=$SECONDS
netem_all loss 0.5% || { netem_all clear; fail "background: could not inject 0.5% loss on every link"; }
sleep 30
log "background 0.5% on every link for 30 s: first suspect '$(first_suspect)'"
"$LAB" netem node6 loss 10% >/dev/null || { netem_all clear; fail "background: could not inject 10% on node6"; }
t1=$SECONDS
while :; do
  got=$(ALL_SUSPECTS=1 first_suspect)
  [[ $got == "rnic node6 - -" ]] && break
  ((SECONDS - t1 < 60)) || { netem_all clear; fail "0.5% everywhere and 10% on node6: want only 'rnic node6' within 60 s, last: $got"; }
  sleep 2
done
took[background]=$((SECONDS - t1))
netem_all clear || fail "background: could not clear"
t=$(wait_for none 60) || fail "background cleared: a suspect stays ($t)"
log "background: 'rnic node6' alone named after ${took[background]} s; cleared after $t s; $((SECONDS - t0)) s in all"

# 6. A host starved of CPU: the finding is the host, not its RNIC nor its
# ToR. The busy loops end by themselves after 75 s should the clear fail.
hog='cp /bin/dash /tmp/mesh-hog && for i in $(seq "$(nproc)"); do
  setsid -f timeout 75 chrt -f 50 /tmp/mesh-hog -c "while :; do :; done" </dev/null >/dev/null 2>&1; done'
t0=$SECONDS
lsh node5 "$hog" >/dev/null || fail "starved: could not start the busy loops in node5"
if ! t=$(wait_for "host node5" 60); then
  "$LAB" kill node5 mesh-hog >/dev/null 2>&1 || true
  fail "node5 starved of CPU: rocectl mesh did not name 'host node5' first within 60 s ($t); $(mesh | head -c 600)"
fi
took[starved]=$t
"$LAB" kill node5 mesh-hog >/dev/null || true  # already gone if their timeout ended them
t=$(wait_for none 60) || fail "node5 no longer starved: a suspect stays ($t)"
log "starved: 'host node5' named after ${took[starved]} s; cleared after $t s; $((SECONDS - t0)) s in all"

prom="from Prometheus not checked (no prometheus installed)"
[[ -n $prom_pid ]] && prom="from Prometheus (30 s window) named after ${prom_took[node3 RNIC loss]}, ${prom_took[tor1-spine1 loss]}, ${prom_took[spine1 drops >= 1 KiB]}, ${prom_took[spine2 drops DSCP 26]} s more"
pass "named within: RNIC ${took[node3 RNIC loss]} s, uplink ${took[tor1-spine1 loss]} s, large frames ${took[spine1 drops >= 1 KiB]} s, DSCP ${took[spine2 drops DSCP 26]} s, RNIC over background loss ${took[background]} s, starved host ${took[starved]} s; $prom; ${alert_seen:-alert not checked}"
