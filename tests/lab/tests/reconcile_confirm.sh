#!/usr/bin/env bash
# ConfirmConfig on a real kernel. (1) `rocectl apply --confirm-timeout 10s`
# (not ready meanwhile: `rocectl ready` exits 1 and /readyz answers 503,
# both naming the provisional generation; ready again after the confirm)
# then `rocectl confirm`: the config stays past the deadline (same
# generation, no deadline, node state read with dcb -j/sysfs/configfs
# unchanged and still the config's). (2) A provisional config whose deadline
# expires while node1's agent is stopped: nothing rolls it back while the
# agent is down, and the agent rolls it back at start-up (node state back to
# the baseline read before, config source CONFIRM_TIMEOUT).
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset
base=$(rec_snapshot)
gen0=$(rec_generation)

# guest_now: node1's clock (the agent's deadlines are on it), epoch seconds.
guest_now() { lx "$REC_NODE" bash -c 'echo $EPOCHREALTIME'; }
# deadline_of STATUS_JSON: the confirm deadline as epoch seconds, or "none".
deadline_of() {
  "$PY" -c 'import json, sys; from datetime import datetime
c = json.loads(sys.argv[1])["config"]
print(datetime.fromisoformat(c["confirmDeadline"].replace("Z", "+00:00")).timestamp() if "confirmDeadline" in c else "none")' "$1"
}
lossless_checks() { # lossless_checks WHAT SNAPSHOT: the node holds lossless-prio3.yaml's state
  expect_eq "$1: PFC (dcb -j)" "[False, False, False, True, False, False, False, False]" "$(snap_get "$2" "j['pfc']['prio_pfc']")"
  expect_eq "$1: DSCP app table (dcb -j)" "[[26, 3], [48, 6]]" "$(snap_get "$2" "sorted(j['app']['dscp_prio'])")"
  expect_eq "$1: ETS tc_bw (dcb -j)" "[50, 50, 100, 100, 100, 100, 100, 100]" "$(snap_get "$2" "j['ets']['tc_bw']")"
  expect_eq "$1: ECN roce_np (sysfs)" "[3]" "$(snap_get "$2" "j['ecn_np']")"
  expect_eq "$1: trust (dcbtest)" dscp "$(snap_get "$2" "j['trust']")"
  expect_eq "$1: default_roce_tos (configfs)" 106 "$(snap_get "$2" "j.get('roce_tos')")"
}

# --- 1. apply provisionally, confirm, wait past the deadline: it stays.
out=$(rctl apply --confirm-timeout 10s -f "$LOSSLESS") || fail "provisional apply failed: $out"
grep -q "^Provisional" <<<"$out" || fail "rocectl did not say the config is provisional:
$out"
gen=$(sed -n 's/^Accepted as generation \([0-9]*\)\.$/\1/p' <<<"$out")
[[ -n $gen ]] && ((gen > gen0)) || fail "no new generation in the apply output (was $gen0):
$out"
st=$(rec_status)
dl=$(deadline_of "$st")
[[ $dl != none ]] || fail "status shows no confirm deadline right after a provisional apply"
expect_eq "generation while provisional" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
# Not ready while provisional, by both ways of asking.
if r=$(rctl ready); then fail "rocectl ready exited 0 with generation $gen provisional: $r"; fi
grep -q "^\[-\] confirmed failed: generation $gen is provisional" <<<"$r" || fail "rocectl ready while provisional:
$r"
rz=$(rec_readyz)
[[ $rz == "503 "*"[-]confirmed failed: generation $gen is provisional"* ]] || fail "/readyz while provisional: $rz"
c=$(rctl confirm) || fail "rocectl confirm failed: $c"
t_confirm=$(guest_now)
expect_eq "rocectl confirm" "Generation $gen confirmed." "$c"
"$PY" -c "import sys; sys.exit(0 if $t_confirm < $dl else 1)" ||
  fail "the confirm came after the deadline (confirmed at $t_confirm, deadline $dl): this run proves nothing"
st=$(rec_status)
expect_eq "confirm deadline after confirm" none "$(deadline_of "$st")"
confirmed=$(rec_snapshot)
lossless_checks "after confirm" "$confirmed"
# Ready once confirmed (and converged: the reconcile after the apply).
t0=$SECONDS
until r=$(rctl ready); do
  ((SECONDS - t0 < 30)) || fail "rocectl ready not ready 30 s after the confirm: $r"
  sleep 1
done
rz=$(rec_readyz) && [[ $rz == "200 ok" ]] || fail "/readyz after confirm, with rocectl ready passing: $rz"
rz=$(rec_readyz "?verbose")
[[ $rz == "200 [+]discovery ok | [+]state ok | [+]converged ok | [+]confirmed ok | [+]grpc ok | readyz check passed" ]] ||
  fail "/readyz?verbose after confirm: $rz"
# Past the deadline, with margin for the agent's timer.
while "$PY" -c "import sys; sys.exit(0 if $(guest_now) < $dl + 3 else 1)"; do sleep 0.5; done
now=$(rec_snapshot)
expect_same_state "3 s past the confirmed config's deadline" "$confirmed" "$now"
lossless_checks "past the deadline" "$now"
st=$(rec_status)
expect_eq "generation past the deadline" "$gen" "$(json_get "$st" "int(j['config']['generation'])")"
expect_eq "confirm deadline past the deadline" none "$(deadline_of "$st")"
src=$(json_get "$st" "j['config']['source']")
[[ $src != CONFIG_SOURCE_CONFIRM_TIMEOUT ]] || fail "config source $src after a confirmed apply"
expect_eq "desired PFC past the deadline" "[3]" "$(json_get "$st" "j['config']['desired']['interfaces'][0]['qos']['pfc']['priorities']")"
log "generation $gen confirmed $(awk -v a="$t_confirm" -v b="$dl" 'BEGIN{printf "%.1f", b-a}') s before its deadline: still in force 3 s past it (source $src)"

# --- 2. provisional, agent stopped, deadline passes, agent starts: rolled back.
rec_reset
base=$(rec_snapshot)
gen0=$(rec_generation)
out=$(rctl apply --confirm-timeout 8s -f "$LOSSLESS") || fail "provisional apply failed: $out"
grep -q "^Provisional" <<<"$out" || fail "rocectl did not say the config is provisional:
$out"
gen=$(sed -n 's/^Accepted as generation \([0-9]*\)\.$/\1/p' <<<"$out")
dl=$(deadline_of "$(rec_status)")
[[ $dl != none ]] || fail "status shows no confirm deadline right after the provisional apply"
"$LAB" agent stop "$REC_NODE" >/dev/null || fail "could not stop node1's agent"
t_stop=$(guest_now)
lx "$REC_NODE" pgrep -x roced >/dev/null && fail "roced still running on node1 after lab agent stop"
"$PY" -c "import sys; sys.exit(0 if $t_stop < $dl else 1)" ||
  fail "the agent stopped only after the deadline (stopped $t_stop, deadline $dl): the rollback at start-up is not what this run sees"
held=$(rec_snapshot)
lossless_checks "agent stopped before the deadline" "$held"
log "provisional generation $gen, deadline $(awk -v a="$t_stop" -v b="$dl" 'BEGIN{printf "%.1f", b-a}') s after the agent stopped"
while "$PY" -c "import sys; sys.exit(0 if $(guest_now) < $dl + 2 else 1)"; do sleep 0.5; done
held=$(rec_snapshot)
lossless_checks "deadline passed with the agent stopped (nothing rolls it back)" "$held"
t_start=$(guest_now)
"$LAB" agent start "$REC_NODE" >/dev/null || fail "node1's agent does not start again"
deadline=$((SECONDS + 30))
while :; do
  now=$(rec_snapshot)
  [[ $now == "$base" ]] && break
  ((SECONDS < deadline)) || expect_same_state "30 s after the agent started past the deadline" "$base" "$now"
  sleep 0.5
done
log "node back to the baseline $(awk -v a="$t_start" -v b="$(guest_now)" 'BEGIN{printf "%.1f", b-a}') s after the agent was started (the start included)"
st=$(rec_status)
expect_eq "config source after the start-up rollback" CONFIG_SOURCE_CONFIRM_TIMEOUT "$(json_get "$st" "j['config']['source']")"
expect_eq "confirm deadline after the start-up rollback" none "$(deadline_of "$st")"
expect_eq "the config returned to manages nothing" "[]" "$(json_get "$st" "j['config']['desired'].get('interfaces', [])")"
g=$(json_get "$st" "int(j['config']['generation'])")
((g != gen)) || fail "generation $gen (the expired provisional one) still in force after the start-up rollback"
pass "confirmed generation stays past its deadline; a deadline that expired while the agent was stopped is rolled back at start-up (node back to the baseline, generation $gen -> $g, source CONFIRM_TIMEOUT)"
