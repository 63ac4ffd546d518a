#!/usr/bin/env bash
# Observe mode: a change behind the agent's back is reported (rocectl -o json
# status: qos.pfc DRIFTED, not converged; reconcile_runs_total{drift_observed}
# and drift_detected_total rise) but left as it is.
source "$(dirname "$0")/reconcile_lib.sh"
rec_reset

rctl apply -f "$LOSSLESS" >/dev/null || fail "apply of lossless-prio3.yaml failed"
observe=$(sed 's/^mode: enforce$/mode: observe/' "$LOSSLESS" | cfg observe)
grep -q '^mode: observe$' "$observe" || fail "could not make an observe-mode copy of $LOSSLESS"
out=$(rctl apply -f "$observe") || fail "apply in observe mode failed: $out"
# Nothing to write, but not "No changes": the mode changes, and apply says so.
grep -q "^No steps to write" <<<"$out" || fail "observe-mode config on a node already in that state planned steps:
$out"
grep -q "^Mode: enforce -> observe (drift is reported, no longer corrected)$" <<<"$out" ||
  fail "apply did not tell the mode change:
$out"
obs0=$(rec_metric 'roced_reconcile_runs_total{result="drift_observed"}')
drift0=$(rec_metric roced_drift_detected_total)

lsh "$REC_NODE" "echo 0 > $DCBT/calls; dcb pfc set dev eth0 prio-pfc 3:off"
deadline=$((SECONDS + 15))
while :; do
  st=$(rec_status)
  [[ $(rec_field_sync "$st" eth0 qos.pfc) == FIELD_SYNC_DRIFTED ]] && break
  ((SECONDS < deadline)) || fail "qos.pfc never showed DRIFTED in rocectl status: $st"
  sleep 0.5
done
expect_eq "converged" False "$(json_get "$st" "j['config'].get('converged', False)")"
expect_eq "observed qos.pfc" "priorities [] delay 7" \
  "$(json_get "$st" "next(f['observed'] for f in j['fields'] if f['field'] == 'qos.pfc')")"
obs1=$(rec_metric 'roced_reconcile_runs_total{result="drift_observed"}')
drift1=$(rec_metric roced_drift_detected_total)
"$PY" -c "import sys; sys.exit(0 if float('$obs1') > float('$obs0') and float('$drift1') > float('$drift0') else 1)" ||
  fail "metrics did not record the drift: drift_observed $obs0 -> $obs1, drift_detected $drift0 -> $drift1"

# Left alone, after the pass that saw it (and a while longer).
sleep 2
pfc=$(lx "$REC_NODE" dcb -j pfc show dev eth0)
expect_eq "PFC after observe-mode passes" "[False, False, False, False, False, False, False, False]" \
  "$(json_get "$pfc" "j['prio_pfc']")"
expect_eq "setpfc calls (only dcb's)" 1 "$(json_get "$(rec_calls)" "j['setpfc']")"
pass "DRIFTED reported, PFC 3 left off; drift_observed $obs0 -> $obs1"
