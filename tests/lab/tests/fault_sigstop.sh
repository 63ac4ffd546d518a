#!/usr/bin/env bash
# Fault matrix: node1's agent frozen (SIGSTOP) for 12 s, longer
# than every deadline its callers use, then thawed (SIGCONT). node1 runs
# lossless-prio3 with the lab's probes.peers.
#  - Called while it is stopped: `rocectl --timeout 4s status`, `rocectl
#    --timeout 4s apply` of another config, and node2 probing node1 (the
#    OpenEndpoint call has the 5 s open timeout). Each must return an error
#    within its deadline plus 2 s (DEADLINE_EXCEEDED / UNAVAILABLE, node2's
#    probe peer_unavailable), not hang; and the apply must not land later.
#  - Outstanding when it stops: `rocectl --timeout 3s probe node2 --kind
#    bandwidth --duration 2s` (running, its MR on rxe0): it returns within
#    rocectl's deadline for it (29 s: --timeout + 3 x duration + 20 s), with
#    a result or a clear reason.
#  - While it is stopped PFC is changed by hand (the drift waits: nothing
#    runs). After SIGCONT the agent answers at once (status within 3 s), the
#    reconcile loop corrects the drift by itself (node equal to before, read
#    with dcb -j and sysfs; the drift in its log), generation and config
#    are unchanged, and the probe state recovers: node2 -> node1 and
#    node1 -> node2 probes succeed again and node1's status shows a
#    successful latency probe of node2.
source "$(dirname "$0")/reconcile_lib.sh"
source "$(dirname "$0")/probe_lib.sh"
rec_on_cleanup 'lx node1 pkill -CONT -x roced'
rec_reset
probe_prepare node2

# ctl_to FILE NODE TIMEOUT ARGS...: rocectl against NODE with its own
# deadline; FILE gets "RC SECONDS", then the output (stderr included).
ctl_to() {
  local file=$1 node=$2 timeout=$3 t0 rc=0 out
  shift 3
  t0=$(date +%s.%N)
  out=$(ip netns exec "$PROBE_NS" "$ROCECTL_BIN" --target "$("$LAB" addr "$node"):7471" --timeout "$timeout" "$@" 2>&1) || rc=$?
  printf '%s %s\n%s\n' "$rc" "$(elapsed "$t0")" "$out" >"$file"
}
within() { awk -v t="$1" -v b="$2" 'BEGIN{exit !(t <= b)}'; }

C=$(cfg lossless-probes < <(cat "$("$LAB" logdir node1)/roced.yaml"; echo 'mode: enforce'; sed -n '/^interfaces:/,$p' "$LOSSLESS"))
rctl apply -f "$C" >/dev/null || fail "apply of lossless-prio3 with probes.peers failed"
gen=$(rec_generation)
state=$(rec_snapshot)
pid=$(agent_pid node1)

# The outstanding call, running when the agent stops: rocectl's deadline for
# a bandwidth probe is --timeout + 3 x duration + 20 s (29 s here).
ctl_to "$REC_TMP/a" node1 3s -o json probe node2 --kind bandwidth --duration 2s &
pa=$!
wait_mr node1 65536 "$pa" "the bandwidth probe" 10
mark=$(log_mark node1)
"$LAB" kill node1 roced --signal STOP >/dev/null || fail "could not stop node1's roced"
t_stop=$(date +%s.%N)
# Called while it is stopped: a read, a change (another config: it must not
# land later behind the caller's back), and node2's probe.
ctl_to "$REC_TMP/b" node1 4s -o json status &
pb=$!
ctl_to "$REC_TMP/e" node1 4s apply -f "$PRIO4" &
pe=$!
probe_to_node1() { ctl_to "$REC_TMP/c" node2 30s -o json probe node1 --iterations 10; }
probe_to_node1 &
pc=$!
lsh node1 'dcb pfc set dev eth0 prio-pfc 3:off'
wait "$pb" "$pe" "$pc" || true
for x in b:4 e:4 c:5; do
  read -r rc took <"$REC_TMP/${x%%:*}"
  bound=$((${x##*:} + 2))
  out=$(tail -n +2 "$REC_TMP/${x%%:*}")
  case ${x%%:*} in
    b) what="rocectl --timeout 4s status" ;;
    e) what="rocectl --timeout 4s apply of the prio-4 config" ;;
    c) what="node2's probe of node1 (5 s open timeout)" ;;
  esac
  ((rc != 0)) || fail "$what succeeded against a stopped agent: $out"
  within "$took" "$bound" || fail "$what returned after $took s (bound ${bound} s): $out"
  if [[ ${x%%:*} == c ]]; then
    expect_eq "$what: failure reason" peer_unavailable "$(json_get "$out" "j.get('failureReason', '')")"
    log "stopped: $what: peer_unavailable after $took s ($(json_get "$out" "j.get('failureDetail', '')"))"
  else
    grep -qE 'did not answer in time|not reachable' <<<"$out" || fail "$what: want DEADLINE_EXCEEDED or UNAVAILABLE, got: $out"
    log "stopped: $what: exit $rc after $took s: $out"
  fi
done
expect_eq "PFC while the agent is stopped (the drift waits)" \
  "[False, False, False, False, False, False, False, False]" "$(snap_get "$(rec_snapshot)" "j['pfc']['prio_pfc']")"
while within "$(elapsed "$t_stop")" 12; do sleep 0.2; done
stopped=$(elapsed "$t_stop")
lx node1 pkill -CONT -x roced || fail "could not continue node1's roced"

ctl_to "$REC_TMP/d" node1 5s -o json status
read -r rc took <"$REC_TMP/d"
((rc == 0)) || fail "status right after SIGCONT failed: $(tail -n +2 "$REC_TMP/d")"
within "$took" 3 || fail "status right after SIGCONT took $took s (bound 3 s)"
log "stopped ${stopped} s; status answered ${took} s after SIGCONT"
wait "$pa" || true
read -r rc took_a <"$REC_TMP/a"
out=$(tail -n +2 "$REC_TMP/a")
within "$took_a" 31 || fail "the probe outstanding at the stop returned after $took_a s (its deadline: 29 s)"
if ((rc == 0)); then
  log "the probe outstanding at the stop: succeeded after $took_a s"
else
  reason=$(json_get "$out" "j.get('failureReason', '')" 2>/dev/null) || reason=""
  [[ $reason != internal ]] || fail "the probe outstanding at the stop: no clear reason: $out"
  log "the probe outstanding at the stop: exit $rc after $took_a s: ${reason:-$out}"
fi
back=$(rec_wait_state "$state" 10 "the PFC change made while the agent was stopped")
line=$(expect_log node1 "$mark" 'drift \(.*\): [0-9]+ field\(s\) differ; correcting' "drift correction after SIGCONT")
log "drift corrected ${back} s after SIGCONT; agent log: $line"

ok=0
for _ in 1 2 3 4 5; do
  probe_to_node1
  [[ $(head -c 1 "$REC_TMP/c") == 0 ]] && { ok=1; break; }
  sleep 1
done
((ok)) || fail "node2 cannot probe node1 after SIGCONT: $(tail -n +2 "$REC_TMP/c")"
ok=0
for _ in 1 2 3 4 5; do
  out=$(pctl node1 -o json probe node2 --iterations 10) && { ok=1; break; }
  sleep 1
done
((ok)) || fail "node1 cannot probe node2 after SIGCONT: $out"
st=$(rec_status)
expect_eq "node1's latest latency probe of node2 in status" True \
  "$(json_get "$st" "any(p.get('peer') == 'node2' and p.get('kind') == 'PROBE_KIND_LATENCY' and p.get('lastSuccess') for p in j.get('probes', []))")"
expect_eq "accepted generation" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
expect_eq "converged" True "$(json_get "$st" "j['config'].get('converged', False)")"
expect_eq "node1's roced pid" "$pid" "$(agent_pid node1)"
pass "stopped ${stopped} s: callers failed in bounded time; status ${took} s after SIGCONT, drift corrected ${back} s after, probes both ways work"
