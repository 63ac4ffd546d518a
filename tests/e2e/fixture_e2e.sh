#!/usr/bin/env bash
# End-to-end on the checked-in fixture sysfs tree: the real roced and rocectl
# binaries, gRPC on TCP and on a unix socket, a real /metrics scrape checked
# by promtool, config rejection at start-up and on SIGHUP, graceful stop.
# Usage: fixture_e2e.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
FIXTURE=$SRC/tests/fixtures/sysfs
WORK=$(mktemp -d /tmp/roced-e2e.XXXXXX)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"

command -v promtool >/dev/null || { echo "SKIP: promtool not installed (apt-get install prometheus)"; exit 77; }
command -v curl >/dev/null || { echo "SKIP: curl not installed"; exit 77; }

GRPC_PORT=$(free_port)
METRICS_PORT=$(free_port)
SOCK=$WORK/roced.sock
CONFIG=$WORK/roced.yaml
cp "$SRC/deploy/examples/minimal.yaml" "$CONFIG"

start_roced() {
  "$BIN/roced" --sysfs-root "$FIXTURE" --config "$CONFIG" \
    --grpc-listen "127.0.0.1:$GRPC_PORT" --insecure --metrics-listen "127.0.0.1:$METRICS_PORT" \
    --socket "$SOCK" --state-dir "$WORK/state" --log-level info 2>>"$WORK/roced.log" &
  PID=$!
  for _ in $(seq 1 100); do
    "$BIN/rocectl" --socket "$SOCK" --timeout 1s status >/dev/null 2>&1 && return 0
    kill -0 "$PID" 2>/dev/null || return 1
    sleep 0.1
  done
  return 1
}

# --- help and version -----------------------------------------------------
help=$("$BIN/roced" --help)
check "roced --help has man-page sections" grep -q "^SYNOPSIS" <<<"$help"
check "roced --help documents --sysfs-root" grep -q -- "--sysfs-root DIR" <<<"$help"
check "roced --version" grep -Eq "^roced [0-9]+\.[0-9]+\.[0-9]+ \(commit " <<<"$("$BIN/roced" --version)"
set +e
"$BIN/roced" --no-such-flag >/dev/null 2>"$WORK/err"; rc=$?
set -e
check "unknown roced flag exits 2 naming it" test "$rc" = 2 -a -n "$(grep -- '--no-such-flag' "$WORK/err")"

# --- start and status ---------------------------------------------------
check "roced starts on the fixture tree" start_roced
"$BIN/rocectl" --target "127.0.0.1:$GRPC_PORT" --insecure -o json status >"$WORK/status.json"
check "rocectl -o json status over TCP lists fixture devices with GID types" python3 - "$WORK/status.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
names = sorted(d["name"] for d in s["devices"])
assert names == ["mlx5_0", "mlx5_1", "mlx5_2", "rxe0"], names
types = {g["type"] for d in s["devices"] for p in d["ports"] for g in p.get("gids", [])}
assert {"GID_TYPE_ROCE_V1", "GID_TYPE_ROCE_V2"} <= types, types
m2 = next(d for d in s["devices"] if d["name"] == "mlx5_2")
assert m2["pcie"]["degraded"] is True and m2["pcie"]["currentWidth"] == 4, m2["pcie"]
m0 = next(d for d in s["devices"] if d["name"] == "mlx5_0")
assert m0["pciAddress"] == "0000:3b:00.0" and m0["ports"][0]["netdev"] == "ens1f0"
assert s["config"]["generation"] == "1", s["config"]
PY
table=$("$BIN/rocectl" --socket "$SOCK" status)
check "rocectl status (unix socket) table warns about the x4 link" grep -q "mlx5_2: PCIe link degraded" <<<"$table"
check "rocectl -o yaml status parses as YAML" python3 -c 'import sys, yaml; d = yaml.safe_load(sys.stdin); assert len(d["devices"]) == 4' < <("$BIN/rocectl" --socket "$SOCK" -o yaml status)
check "rocectl version shows both sides" grep -q "^roced " <<<"$("$BIN/rocectl" --socket "$SOCK" version)"
# rocectl ready and GET /readyz?verbose answer by one rule: the same checks,
# each passing or not alike, exit 0 exactly when /readyz says 200 (asked
# until two answers in a row agree, as a reconcile pass may land between).
ready_agrees() {
  local doc rc code body
  for _ in 1 2 3 4 5 6 7 8 9 10; do
    doc=$("$BIN/rocectl" --socket "$SOCK" -o json ready) && rc=0 || rc=$?
    code=$(curl -s -o "$WORK/readyz" -w '%{http_code}' "http://127.0.0.1:$METRICS_PORT/readyz?verbose")
    if python3 - "$doc" "$rc" "$code" "$WORK/readyz" <<'PY'
import json, sys
doc, rc, code, body = json.loads(sys.argv[1]), int(sys.argv[2]), sys.argv[3], open(sys.argv[4]).read()
names = [c["name"] for c in doc["checks"]]
assert names == ["discovery", "state", "converged", "confirmed", "grpc"], names
want = [("[+]%s ok" % c["name"]) if c["ok"] else ("[-]%s failed: %s" % (c["name"], c["detail"])) for c in doc["checks"]]
want.append("readyz check %s" % ("passed" if doc["ready"] else "failed"))
assert body.splitlines() == want, (body, want)
assert (rc == 0) == doc["ready"] == (code == "200"), (rc, doc["ready"], code)
PY
    then return 0; fi
    sleep 0.3
  done
  echo "rocectl ready (exit $rc): $doc; /readyz $code: $(cat "$WORK/readyz")"
  return 1
}
check "rocectl ready -o json and /readyz?verbose give the same checks and verdict" ready_agrees

# --- threads ----------------------------------------------------------------
# Every thread is named (roced-<job>, or the library's own name): per-thread
# CPU (top -H, bench/idle_cpu.sh) says which job costs it. Only the main
# thread carries the process name.
# A thread names itself once it runs (pthread_setname_np on pthread_self), so
# one just created (a gRPC worker for the status call above) is briefly
# "roced": the census is retried for up to 5 s and only a thread that stays
# unnamed fails it.
census() {
  unnamed=$(for t in /proc/"$PID"/task/*; do [ "$t" = "/proc/$PID/task/$PID" ] || cat "$t/comm" 2>/dev/null; done | grep -cx roced || true)
  own=$(cat /proc/"$PID"/task/*/comm 2>/dev/null | sort -u | grep -cx 'roced-reconcile\|roced-netlink' || true)
}
# ThreadSanitizer's runtime starts a background thread of its own, unnamed.
allowed=0
# A TSan binary names __tsan_init: imported from GCC's libtsan, or defined
# by clang's runtime, which it links statically (no libtsan for ldd to show).
if grep -qa __tsan_init "$BIN/roced"; then allowed=1; fi
for _ in $(seq 1 50); do
  census
  [ "$unnamed" = "$allowed" ] && [ "$own" = 2 ] && break
  sleep 0.1
done
check "every thread but the main one is named (unnamed: $unnamed, allowed: $allowed)" test "$unnamed" = "$allowed"
check "the agent's own threads are roced-<job> (roced-reconcile and roced-netlink found: $own of 2)" test "$own" = 2
# gRPC's callback API runs two "nexting_thread"s that wake every second for
# the life of the process: nothing in roced may use it (the health
# service is a sync one of our own, agent/api/health_service.h).
nexting=$(cat /proc/"$PID"/task/*/comm 2>/dev/null | grep -cx nexting_thread || true)
check "no gRPC callback-API thread (nexting_thread: $nexting)" test "$nexting" = 0

# --- metrics ----------------------------------------------------------------
curl -sf "http://127.0.0.1:$METRICS_PORT/metrics" >"$WORK/metrics.txt"
check "scrape passes promtool check metrics" sh -c "promtool check metrics < '$WORK/metrics.txt' > '$WORK/promtool.out' 2>&1"
[ -s "$WORK/promtool.out" ] && cat "$WORK/promtool.out"
check "scrape has device info for every fixture device" test "$(grep -c '^roced_device_info{' "$WORK/metrics.txt")" = 4
check "scrape flags the degraded PCIe link" grep -q 'roced_pcie_link_degraded{device="mlx5_2",pci_address="0000:af:00.0"} 1' "$WORK/metrics.txt"

# --- rocectl errors ---------------------------------------------------------
set +e
out=$("$BIN/rocectl" --target 127.0.0.1:1 --insecure --timeout 2s status 2>&1); rc=$?
set -e
check "unreachable agent: exit 3 with one-line reason" test "$rc" = 3 -a "$(wc -l <<<"$out")" = 1
check "unreachable agent message says so" grep -q "agent not reachable at 127.0.0.1:1" <<<"$out"
set +e
"$BIN/rocectl" frobnicate >/dev/null 2>&1; rc1=$?
"$BIN/rocectl" -o xml status >/dev/null 2>&1; rc2=$?
set -e
check "rocectl usage errors exit 2" test "$rc1" = 2 -a "$rc2" = 2
mesh_help=$("$BIN/rocectl" mesh --help)
check "rocectl COMMAND --help lists the command's own flags" \
  sh -c "grep -q '^COMMAND OPTIONS' <<'EOF'
$mesh_help
EOF
grep -q '^  --prometheus URL' <<'EOF'
$mesh_help
EOF"

# --- bad config ---------------------------------------------------------------
cat >"$WORK/bad.yaml" <<'YAML'
apiVersion: roced/v1
kind: NodeConfig
interfaces:
  - match: {netdev: eth0}
    qos:
      pfc: {priorities: [9]}
YAML
set +e
out=$("$BIN/roced" --check-config --config "$WORK/bad.yaml" 2>&1); rc=$?
set -e
check "PFC priority 9 rejected (exit 1)" test "$rc" = 1
check "rejection names line, column, field and range" grep -q "bad.yaml:6:[0-9]*: error: interfaces\[0\].qos.pfc.priorities\[0\]: priority 9 is out of range; allowed 0-7" <<<"$out"
set +e
"$BIN/roced" --sysfs-root "$FIXTURE" --config "$WORK/bad.yaml" --grpc-listen 127.0.0.1:0 --insecure \
  --metrics-listen 127.0.0.1:0 --socket "$WORK/x.sock" --state-dir "$WORK/state2" >/dev/null 2>&1; rc=$?
set -e
check "roced refuses to start with the bad config" test "$rc" = 1

# --- SIGHUP reload (followed with rocectl events) ------------------------------
# --initial: the agent subscribes the stream before it sends the current
# state, so once that first line is out no later event can be missed (a
# fixed 0.5 s wait lost the first reload under TSan in CI).
# wait_events N: until the stream has N lines (at most 20 s); each reload,
# rejected or accepted, is one event.
wait_events() {
  for ((i = 0; i < 200; i++)); do
    (($(wc -l <"$WORK/events.json") >= $1)) && return 0
    sleep 0.1
  done
}
"$BIN/rocectl" --socket "$SOCK" -o json events --initial --for 30s --count 3 >"$WORK/events.json" 2>"$WORK/events.err" &
EVENTS=$!
wait_events 1
cp "$WORK/bad.yaml" "$CONFIG"
kill -HUP "$PID"
wait_events 2
gen=$("$BIN/rocectl" --socket "$SOCK" -o json status | python3 -c 'import json,sys; c=json.load(sys.stdin)["config"]; print(c["generation"], "rejected" if c["lastError"] else "ok")')
check "bad config on SIGHUP: old config stays (generation 1, error recorded)" test "$gen" = "1 rejected"
printf 'apiVersion: roced/v1\nkind: NodeConfig\nmode: enforce\n' >"$CONFIG"
kill -HUP "$PID"
wait_events 3
gen=$("$BIN/rocectl" --socket "$SOCK" -o json status | python3 -c 'import json,sys; c=json.load(sys.stdin)["config"]; print(c["generation"], c["mode"])')
check "good config on SIGHUP is accepted (generation 2)" test "$gen" = "2 MODE_ENFORCE"
"$BIN/rocectl" --socket "$SOCK" get config >"$WORK/got.yaml"
check "rocectl get config: generation 2, YAML that apply --dry-run takes back as no change (exit 0)" \
  sh -c "grep -q '^# generation 2 ' '$WORK/got.yaml' && '$BIN/rocectl' --socket '$SOCK' apply --dry-run -f '$WORK/got.yaml' | grep -q '^No changes'"
rc=0
wait "$EVENTS" || rc=$?
check "rocectl events: exit 0 after --count 3" test "$rc" = 0
check "rocectl -o json events: the state, then the rejected and the accepted reload, one JSON object per line" python3 - "$WORK/events.json" <<'PY'
import json, sys
lines = open(sys.argv[1]).read().splitlines()
assert len(lines) == 3, lines
assert json.loads(lines[0])["state"]["config"]["generation"] == "1", lines[0]
ev = [json.loads(l)["config"] for l in lines[1:]]
assert ev[0]["accepted"] is False and "priority 9 is out of range" in ev[0]["error"], ev[0]
assert ev[1]["accepted"] is True and ev[1]["generation"] == "2" and ev[1]["source"] == "CONFIG_SOURCE_FILE", ev[1]
PY
line=$("$BIN/rocectl" --socket "$SOCK" events --initial --count 1)
check "rocectl events --initial: the current state first, as one line" grep -Eq '^[0-9T:.-]+Z  state      4 device\(s\), generation 2$' <<<"$line"
start=$(date +%s%N)
"$BIN/rocectl" --socket "$SOCK" events --for 1s >/dev/null && rc=0 || rc=$?
took=$((($(date +%s%N) - start) / 1000000))
check "rocectl events --for 1s: exit 0 after about 1 s (${took} ms)" test "$rc" = 0 -a "$took" -ge 900 -a "$took" -lt 5000

# --- graceful stop -----------------------------------------------------------
kill -TERM "$PID"
rc=0
wait "$PID" || rc=$?
PID=
check "SIGTERM: exit 0" test "$rc" = 0
check "SIGTERM: unix socket removed" test ! -e "$SOCK"

# --- state directory faults ------------------------------------------------------
# A truncated accepted.json is kept aside and reported, generations go on.
gen=$(python3 -c 'import json,sys; print(json.load(sys.stdin)["generation"])' <"$WORK/state/accepted.json")
head -c 40 "$WORK/state/accepted.json" >"$WORK/state/accepted.json.new" && mv "$WORK/state/accepted.json.new" "$WORK/state/accepted.json"
check "restart over a truncated accepted.json" start_roced
"$BIN/rocectl" --socket "$SOCK" -o json status >"$WORK/status.json"
check "truncated accepted.json: kept aside, state component unhealthy, generation $gen+1" python3 - "$WORK/status.json" "$gen" "$WORK/state" <<'PY'
import glob, json, sys
s = json.load(open(sys.argv[1]))
c = next(c for c in s["agent"]["components"] if c["name"] == "state")
assert not c.get("healthy", False) and "does not parse" in c["message"] and "kept as" in c["message"], c
assert s["config"]["generation"] == str(int(sys.argv[2]) + 1), s["config"]
assert len(glob.glob(sys.argv[3] + "/accepted.json.bad-*")) == 1
PY
check "truncated accepted.json: roced_component_healthy{component=\"state\"} 0" \
  sh -c "curl -sf 'http://127.0.0.1:$METRICS_PORT/metrics' | grep -qx 'roced_component_healthy{component=\"state\"} 0'"
kill -TERM "$PID"; wait "$PID" || true; PID=

# A state directory that cannot be created: roced serves, degraded, and says why.
: >"$WORK/blocker"
"$BIN/roced" --sysfs-root "$FIXTURE" --config "$CONFIG" --grpc-listen "" --metrics-listen "127.0.0.1:0" \
  --socket "$SOCK" --state-dir "$WORK/blocker/state" --log-level info 2>>"$WORK/roced.log" &
PID=$!
served=0
for _ in $(seq 1 100); do
  "$BIN/rocectl" --socket "$SOCK" --timeout 1s status >/dev/null 2>&1 && { served=1; break; }
  kill -0 "$PID" 2>/dev/null || break
  sleep 0.1
done
check "unwritable state directory: roced keeps serving" test "$served" = 1
table=$("$BIN/rocectl" --socket "$SOCK" status 2>&1 || true)
check "unwritable state directory: rocectl status says why" grep -q "state directory not writable" <<<"$table"
out=$("$BIN/rocectl" --socket "$SOCK" apply -f "$CONFIG" 2>&1) && rc=0 || rc=$?
check "unwritable state directory: a push is refused (UNAVAILABLE, not persisted)" \
  sh -c "test $rc -ne 0 && grep -q 'cannot persist' <<'EOF'
$out
EOF"
kill -TERM "$PID"; wait "$PID" || true; PID=

roced_log() { echo "--- roced log ---"; cat "$WORK/roced.log"; }
echo
finish roced_log
