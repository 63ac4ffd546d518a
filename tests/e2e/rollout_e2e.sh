#!/usr/bin/env bash
# `rocectl rollout` end to end: three real roced agents on the
# fixture tree (own state directories, sockets and loopback ports, plaintext
# gRPC), rollouts with the shortest confirm window (10 s). The fixture
# agents cannot run RDMA probes (no verbs on the fixture tree), so the
# rollouts that must confirm opt out of the probe gates (--probe-peers 0,
# warned about), and the one with default settings fails at its canary:
#   1. a good config under "window=10s,converged" confirms on all three;
#      the opt-out is warned about before the first batch;
#   2. default settings: each node's probe gate calls two other targets
#      (announced before the first batch); the canary's probes fail, it
#      rolls back by itself: the rollout halts (exit 1), the other two
#      agents are untouched, a new rollout over the halted state is refused;
#      then a probe gate naming a peer nobody answers (127.0.0.1:9) does
#      the same;
#   3. --on-failure rollback with the failure in the second batch (its agent
#      is stopped): the canary returns to its previous config, and every
#      agent's desired config is the one it had before;
#   4. rocectl killed (SIGKILL) while the second batch is under way (its
#      first node provisional): `rocectl rollout resume` finishes the
#      rollout.
# The configs change nothing on the (read-only) fixture tree: mode enforce
# and observe with nothing to manage, which the fixture agent converges.
# Usage: rollout_e2e.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
FIXTURE=$SRC/tests/fixtures/sysfs
WORK=$(mktemp -d /tmp/roced-rollout-e2e.XXXXXX)
declare -A PID PORT
ROLLOUT_PID=
cleanup() {
  [ -n "$ROLLOUT_PID" ] && kill -9 "$ROLLOUT_PID" 2>/dev/null || true
  for n in "${!PID[@]}"; do
    [ -n "${PID[$n]}" ] && kill "${PID[$n]}" 2>/dev/null && wait "${PID[$n]}" 2>/dev/null || true
  done
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"

# start_agent N: agent N on its port (kept across restarts), returning once
# it answers.
start_agent() {
  local n=$1 dir=$WORK/a$1
  mkdir -p "$dir"
  [ -f "$dir/roced.yaml" ] || cp "$SRC/deploy/examples/minimal.yaml" "$dir/roced.yaml"
  [ -n "${PORT[$n]:-}" ] || PORT[$n]=$(free_port)
  "$BIN/roced" --sysfs-root "$FIXTURE" --config "$dir/roced.yaml" --grpc-listen "127.0.0.1:${PORT[$n]}" --insecure \
    --metrics-listen 127.0.0.1:0 --socket "$dir/roced.sock" --state-dir "$dir/state" 2>>"$dir/roced.log" &
  PID[$n]=$!
  for _ in $(seq 1 100); do
    "$BIN/rocectl" --socket "$dir/roced.sock" --timeout 1s status >/dev/null 2>&1 && return 0
    kill -0 "${PID[$n]}" 2>/dev/null || { cat "$dir/roced.log"; echo "FAIL - roced $n did not start"; exit 1; }
    sleep 0.1
  done
  echo "FAIL - roced $n did not answer within 10 s"
  exit 1
}

stop_agent() {
  kill -TERM "${PID[$1]}"
  wait "${PID[$1]}" || true
  PID[$1]=
}

# config N: "GENERATION MODE PROVISIONAL" of agent N (over its socket).
config() {
  "$BIN/rocectl" --socket "$WORK/a$1/roced.sock" -o json status | python3 -c '
import json, sys
c = json.load(sys.stdin)["config"]
print(c["generation"], c["desired"].get("mode", "-"), "provisional" if c.get("confirmDeadline") else "permanent")'
}
# desired N: agent N's desired config as canonical JSON.
desired() {
  "$BIN/rocectl" --socket "$WORK/a$1/roced.sock" -o json status |
    python3 -c 'import json, sys; print(json.dumps(json.load(sys.stdin)["config"]["desired"], sort_keys=True))'
}
rollout() { "$BIN/rocectl" --insecure --timeout 3s "$@"; }
# status FILE: the rollout as `rollout status -o json` reads it (the
# snapshot FILE with FILE.journal replayed over it), written to FILE.status;
# prints that file's name.
status() { "$BIN/rocectl" -o json rollout status --state "$1" >"$1.status" && echo "$1.status"; }
# phase FILE: the rollout's phase.
phase() { python3 -c 'import json, sys; print(json.load(open(sys.argv[1]))["phase"])' "$(status "$1")"; }

for n in 1 2 3; do start_agent "$n"; done
printf '# the fleet\n127.0.0.1:%s\n127.0.0.1:%s   # second\n\n127.0.0.1:%s\n' "${PORT[1]}" "${PORT[2]}" "${PORT[3]}" \
  >"$WORK/targets"
printf 'apiVersion: roced/v1\nkind: NodeConfig\nmode: enforce\n' >"$WORK/enforce.yaml"
printf 'apiVersion: roced/v1\nkind: NodeConfig\nmode: observe\n' >"$WORK/observe.yaml"

# Refused before any agent is asked.
rc=0
out=$("$BIN/rocectl" --socket "$WORK/none.sock" apply -f "$WORK/enforce.yaml" --confirm-policy window=10s,converged \
  --confirm-timeout 1m 2>&1) || rc=$?
check "apply --confirm-policy with --confirm-timeout: exit 2 naming both flags" \
  test "$rc" = 2 -a -n "$(grep -- '--confirm-policy and --confirm-timeout' <<<"$out")"
rc=0
out=$(rollout rollout -f "$WORK/enforce.yaml" --targets "$WORK/targets" --max-unavailable 0 2>&1) || rc=$?
check "rollout --max-unavailable 0: exit 2 naming the flag and what is allowed" \
  test "$rc" = 2 -a -n "$(grep -- '--max-unavailable: .0. is not N' <<<"$out")"
rc=0
out=$(rollout rollout -f "$WORK/enforce.yaml" --targets "$WORK/targets" --probe-peers 9 2>&1) || rc=$?
check "rollout --probe-peers 9: exit 2, one line naming the flag and 0-8" \
  test "$rc" = 2 -a "$out" = "rocectl: --probe-peers: 9 is out of range; allowed 0-8"

# The agent side of confirm policies: an apply under a policy is
# provisional. Asked of a fourth agent, so the three start alike.
start_agent 4
out=$("$BIN/rocectl" --socket "$WORK/a4/roced.sock" apply -f "$WORK/enforce.yaml" --confirm-policy window=10s,converged \
  2>"$WORK/a4-apply.err")
if ! grep -q "confirms it by itself" <<<"$out"; then
  echo "SKIP: this roced does not judge confirm policies (an apply under one is not provisional)"
  exit 77
fi
ok "rocectl apply --confirm-policy: the agent confirms or rolls back by itself"
check "apply --confirm-policy without a traffic gate or probes.peers: warned" \
  grep -q "warning: no gate of this confirm policy sends traffic" "$WORK/a4-apply.err"
# rocectl rollback: the provisional config left at once.
a4() { "$BIN/rocectl" --socket "$WORK/a4/roced.sock" "$@"; }
rc=0
out=$(a4 rollback 2>&1) || rc=$?
check "rollback: exit 0 naming the generation returned from ($out)" \
  sh -c "test $rc = 0 && echo '$out' | grep -q 'Provisional generation 2 rolled back: its previous config is in force again as generation 3'"
check "rollback: the agent is at generation 3, permanent, on its previous config" \
  test "$(config 4)" = "3 MODE_OBSERVE permanent"
check "rollback: status says so" grep -q "Config:  generation 3 from rollback on request" <<<"$(a4 status)"
check "rollback: ConfigStatus says why (reason rollback, source ROLLBACK)" python3 -c '
import json, sys
c = json.loads(sys.argv[1])["config"]
assert c["source"] == "CONFIG_SOURCE_ROLLBACK" and c["lastRollback"]["reason"] == "rollback", c' "$(a4 -o json status)"
rc=0
out=$(a4 rollback 2>&1) || rc=$?
check "rollback with nothing provisional: exit 3, one line saying so" \
  sh -c "test $rc = 3 && echo '$out' | grep -q 'no provisional config to roll back (generation 3 is permanent)'"
rc=0
out=$(a4 rollback seven 2>&1) || rc=$?
check "rollback seven: exit 2" sh -c "test $rc = 2 && echo '$out' | grep -q 'is not a generation number'"
stop_agent 4
# --- 1. a good config confirms everywhere -------------------------------------
start=$(date +%s)
rc=0
rollout -o json rollout -f "$WORK/enforce.yaml" --targets "$WORK/targets" --canary 1 --max-unavailable 2 \
  --confirm-policy window=10s,converged --probe-peers 0 --state "$WORK/good.json" >"$WORK/good.ndjson" \
  2>"$WORK/good.err" || rc=$?
took=$(($(date +%s) - start))
check "good config: exit 0 (took ${took} s for batches of 1 and 2 under a 10 s window)" test "$rc" = 0
for n in 1 2 3; do
  check "good config: agent $n at generation 2, enforce, confirmed" test "$(config $n)" = "2 MODE_ENFORCE permanent"
done
check "good config: one JSON object per event, each node confirmed, a summary last" python3 - "$WORK/good.ndjson" <<'PY'
import json, sys
events = [json.loads(l) for l in open(sys.argv[1])]
confirmed = [e for e in events if e["event"] == "node_confirmed"]
assert len(confirmed) == 3 and all(e["generation"] == 2 and e["previous_generation"] == 1 for e in confirmed), confirmed
assert sorted(e["batch"] for e in confirmed) == [0, 1, 1], confirmed
assert [e["event"] for e in events if e["event"] == "batch_started"] == ["batch_started"] * 2
s = events[-1]
assert s["event"] == "summary" and s["phase"] == "done" and s["confirmed"] == 3 and s["nodes"] == 3, s
PY
check "good config: --probe-peers 0 is warned about, on stderr and as an event" \
  sh -c "grep -q 'WARNING: no gate sends traffic' '$WORK/good.err' && grep -q '\"event\":\"warning\"' '$WORK/good.ndjson'"
check "good config: rollout status says done" test "$(phase "$WORK/good.json")" = ROLLOUT_PHASE_DONE
table=$(rollout rollout status --state "$WORK/good.json")
check "good config: rollout status table lists the three nodes confirmed" \
  test "$(grep -c ' confirmed    1 -> 2' <<<"$table")" = 3

# --- 2. a failing probe gate rolls the canary back; the rollout halts --------
before2=$(config 2)
before3=$(config 3)
rc=0
start=$(date +%s)
rollout rollout -f "$WORK/observe.yaml" --targets "$WORK/targets" --max-unavailable 2 \
  --state "$WORK/default.json" >"$WORK/default.out" 2>"$WORK/default.err" || rc=$?
took=$(($(date +%s) - start))
check "default settings: exit 1 after ${took} s (the canary's probes fail at once; its window is 60 s)" \
  test "$rc" = 1 -a "$took" -lt 50
check "default settings: the gates and each node's two probe peers are said before the first batch" \
  grep -q "each node's gates: 1m: converged, no PFC storm; probes (over RDMA, in the new config's RoCE class): \
127.0.0.1:${PORT[1]} -> 127.0.0.1:${PORT[2]}, 127.0.0.1:${PORT[3]}; 127.0.0.1:${PORT[2]} -> 127.0.0.1:${PORT[1]}, \
127.0.0.1:${PORT[3]};" "$WORK/default.out"  # the targets file names them by address
check "default settings: the canary failed its probe gate" \
  grep -q "rollout halted: 127.0.0.1:${PORT[1]} failed: probe" "$WORK/default.err"
check "default settings: agents 2 and 3 untouched" test "$(config 2)/$(config 3)" = "$before2/$before3"
rm -f "$WORK/default.json"*
rc=0
rollout rollout -f "$WORK/observe.yaml" --targets "$WORK/targets" --max-unavailable 2 \
  --confirm-policy "window=10s,converged,probe=127.0.0.1:9" --state "$WORK/probe.json" \
  >"$WORK/probe.out" 2>"$WORK/probe.err" || rc=$?
check "probe gate: exit 1" test "$rc" = 1
check "probe gate: the error names the node and the probe gate" \
  grep -q "rollout halted: 127.0.0.1:${PORT[1]} failed: probe" "$WORK/probe.err"
check "probe gate: the nodes not yet done are said to be untouched" grep -q "2 node(s) not yet done are untouched" \
  "$WORK/probe.err"
check "probe gate: the canary returned by itself to enforce" test "$(config 1 | cut -d' ' -f2-)" = "MODE_ENFORCE permanent"
check "probe gate: agent 2 untouched ($before2)" test "$(config 2)" = "$before2"
check "probe gate: agent 3 untouched ($before3)" test "$(config 3)" = "$before3"
check "probe gate: state halted" test "$(phase "$WORK/probe.json")" = ROLLOUT_PHASE_HALTED
rc=0
rollout rollout -f "$WORK/observe.yaml" --targets "$WORK/targets" --state "$WORK/probe.json" >/dev/null \
  2>"$WORK/again.err" || rc=$?
check "a new rollout over a halted one is refused (exit 3), naming rollout resume" \
  sh -c "test $rc = 3 && grep -q 'unfinished rollout.*rollout resume' '$WORK/again.err'"

# --- 3. --on-failure rollback, failing in the second batch ----------------------
for n in 1 2 3; do desired "$n" >"$WORK/before$n"; done
before1=$(config 1)
stop_agent 2
rc=0
rollout rollout -f "$WORK/observe.yaml" --targets "$WORK/targets" --canary 1 --max-unavailable 1 \
  --on-failure rollback --confirm-policy window=10s,converged --probe-peers 0 --state "$WORK/rollback.json" \
  >"$WORK/rollback.out" 2>"$WORK/rollback.err" || rc=$?
start_agent 2
check "rollback: exit 1 naming the unreachable second node" \
  sh -c "test $rc = 1 && grep -q 'rolled back: 127.0.0.1:${PORT[2]} failed: unreachable' '$WORK/rollback.err'"
check "rollback: the canary confirmed first" grep -q "127.0.0.1:${PORT[1]}: confirmed generation" "$WORK/rollback.out"
for n in 1 2 3; do
  check "rollback: agent $n's desired config is the one it had before" \
    test "$(desired "$n")" = "$(cat "$WORK/before$n")"
done
check "rollback: the canary is back at enforce two generations on, not provisional (before: $before1)" \
  test "$(config 1)" = "$(($(cut -d' ' -f1 <<<"$before1") + 2)) MODE_ENFORCE permanent"
check "rollback: state reverted, the canary reverted, the third node skipped" python3 - "$(status "$WORK/rollback.json")" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["phase"] == "ROLLOUT_PHASE_REVERTED", s["phase"]
states = [n["state"] for n in s["nodes"]]
assert states == ["ROLLOUT_NODE_STATE_REVERTED", "ROLLOUT_NODE_STATE_FAILED", "ROLLOUT_NODE_STATE_SKIPPED"], states
n = s["nodes"][0]
assert int(n["revertedGeneration"]) == int(n["generation"]) + 1 == int(n["previousGeneration"]) + 2, n
PY

# --- 4. rocectl killed mid-rollout; resume finishes it ------------------------------
# rocectl itself in the background (not the rollout function, whose $! is
# a subshell: killing that leaves rocectl running, holding the state's lock).
"$BIN/rocectl" --insecure --timeout 3s -o json rollout -f "$WORK/observe.yaml" --targets "$WORK/targets" \
  --canary 1 --max-unavailable 2 --confirm-policy window=10s,converged --probe-peers 0 --state "$WORK/kill.json" \
  >"$WORK/kill.ndjson" 2>"$WORK/kill.err" &
ROLLOUT_PID=$!
# Until the second node is provisional (its node_waiting event), at most 40 s.
for _ in $(seq 1 400); do
  grep -q "\"event\":\"node_waiting\",.*\"node\":\"127.0.0.1:${PORT[2]}\"" "$WORK/kill.ndjson" && break
  sleep 0.1
done
kill -9 "$ROLLOUT_PID" 2>/dev/null || true
wait "$ROLLOUT_PID" 2>/dev/null || true
ROLLOUT_PID=
# The third node, in the same batch, may be anywhere short of an outcome.
check "kill -9: killed while the second node waited (state running)" python3 - "$(status "$WORK/kill.json")" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert s["phase"] == "ROLLOUT_PHASE_RUNNING", s["phase"]
states = [n["state"].replace("ROLLOUT_NODE_STATE_", "") for n in s["nodes"]]
assert states[:2] == ["CONFIRMED", "WAITING"] and states[2] in ("PENDING", "APPLYING", "WAITING"), states
PY
# The snapshot alone is the one written at the start: every step since is a
# line of the journal (a three-node rollout never outgrows 64 KiB of it).
check "kill -9: the steps are in the journal, the snapshot is the first one" python3 - "$WORK/kill.json" <<'PY'
import json, sys
s = json.load(open(sys.argv[1]))
assert all(n["state"] == "ROLLOUT_NODE_STATE_PENDING" for n in s["nodes"]), s["nodes"]
lines = open(sys.argv[1] + ".journal").read().splitlines()
# canary: applying, waiting, confirmed (gates maybe); second node: applying, waiting
assert len(lines) >= 5, lines
assert all(json.loads(l)["seq"] for l in lines[:-1])
PY
check "kill -9: agent 2 is provisional" test "$(config 2 | cut -d' ' -f3)" = provisional
rc=0
rollout rollout resume --state "$WORK/kill.json" >"$WORK/resume.out" 2>"$WORK/resume.err" || rc=$?
check "resume: exit 0" test "$rc" = 0
check "resume: state done" test "$(phase "$WORK/kill.json")" = ROLLOUT_PHASE_DONE
for n in 1 2 3; do
  check "resume: agent $n observe and confirmed" test "$(config "$n" | cut -d' ' -f2-)" = "MODE_OBSERVE permanent"
done
rc=0
rollout rollout resume --state "$WORK/kill.json" >/dev/null 2>"$WORK/resume2.err" || rc=$?
check "resume of a finished rollout: nothing to do, exit 0" \
  sh -c "test $rc = 0 && grep -q 'nothing to resume' '$WORK/resume2.err'"

# show_logs: rocectl's output and the end of each agent's log.
show_logs() {
  for f in "$WORK"/*.err "$WORK"/*.out; do echo "--- $f"; cat "$f"; done
  for n in 1 2 3; do echo "--- roced $n log"; tail -20 "$WORK/a$n/roced.log"; done
}
echo
finish show_logs
