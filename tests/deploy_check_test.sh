#!/usr/bin/env bash
# The deploy check itself: clean on the real tree; on a scratch copy it
# fails, naming what is wrong, for a misspelled metric in an alert rule, in a
# rule test's input series (which would pass along with the rule) and in the
# dashboard; a metric the code no longer exports; rate() of a gauge; an
# alert without runbook_url, one whose section is missing, a runbook section
# for no alert, a doc naming an alert that does not exist; a Containerfile
# that copies a path the tree lacks; and a DaemonSet image that is not the
# version the Containerfile tags.
# Usage: deploy_check_test.sh SOURCE_DIR
set -euo pipefail
SRC=$1
WORK=$(mktemp -d /tmp/roced-deploy-check.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
pass=0 fail=0
ok() { echo "ok   - $*"; pass=$((pass + 1)); }
bad() { echo "FAIL - $*"; fail=$((fail + 1)); }

if python3 "$SRC/tests/deploy_check.py" "$SRC"; then ok "deploy/ matches the tree"; else bad "deploy/ does not match the tree"; fi

# The tree without build directories (the Containerfile's paths are checked
# against it); each case changes a copy and puts the original back.
tar -C "$SRC" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$WORK" -xf -
python3 "$SRC/tests/deploy_check.py" "$WORK" >/dev/null || bad "the scratch copy is not clean"

# expect_failure NAME WANT FILE...: the check on $WORK must exit 1 and print
# WANT; the FILEs (relative to the tree) are restored afterwards.
expect_failure() {
  local name=$1 want=$2 out rc f
  shift 2
  set +e
  out=$(python3 "$SRC/tests/deploy_check.py" "$WORK" 2>&1); rc=$?
  set -e
  if [ "$rc" = 1 ] && grep -qF -- "$want" <<<"$out"; then
    ok "$name fails the check: $want"
  else
    bad "$name was not caught (exit $rc, wanted '$want'): $out"
  fi
  for f in "$@"; do cp "$SRC/$f" "$WORK/$f"; done
}

edit() {  # edit FILE OLD NEW: the first OLD in the scratch copy's FILE (literally)
  local f=$WORK/$1 text
  text=$(<"$f")
  [[ $text == *"$2"* ]] || { echo "FAIL - $1 has no '$2'"; exit 1; }
  printf '%s\n' "${text/"$2"/"$3"}" >"$f"
}

P=deploy/prometheus
edit $P/roced-alerts.yml 'roced_pcie_link_degraded == 1' 'roced_pcie_link_degradation == 1'
expect_failure "a misspelled metric in an alert" \
  "roced-alerts.yml: RocedPcieLinkDegraded: roced_pcie_link_degradation is not a metric roced exports" \
  $P/roced-alerts.yml
edit $P/roced-alerts.test.yml "series: 'roced_pcie_link_degraded{" "series: 'roced_pcie_degraded{"
expect_failure "a misspelled input series in a rule test" \
  "input series: roced_pcie_degraded is not a metric roced exports" $P/roced-alerts.test.yml
edit deploy/grafana/roced.json 'count(roced_converged{' 'count(roced_convergd{'
expect_failure "a misspelled metric in the dashboard" "roced_convergd is not a metric roced exports" \
  deploy/grafana/roced.json
# The code stops exporting a family the rules use: renamed in the sources,
# the golden output and the metrics doc alike.
grep -rlF roced_component_healthy "$WORK/lib" "$WORK/agent" "$WORK/tests/fixtures" "$WORK/docs/metrics.md" |
  xargs sed -i 's/roced_component_healthy/roced_component_ok/g'
expect_failure "a metric the code no longer exports" \
  "RocedComponentUnhealthy: roced_component_healthy is not a metric roced exports"
rm -rf "${WORK:?}/lib" "${WORK:?}/agent" "${WORK:?}/tests/fixtures" "${WORK:?}/docs"
cp -r "$SRC/lib" "$SRC/agent" "$WORK/"
cp -r "$SRC/tests/fixtures" "$WORK/tests/"
cp -r "$SRC/docs" "$WORK/"
edit $P/roced-alerts.yml 'expr: roced_component_healthy == 0' 'expr: rate(roced_component_healthy[5m]) < 0'
expect_failure "rate() of a gauge" "rate/increase of roced_component_healthy, which is a gauge" \
  $P/roced-alerts.yml

edit $P/roced-mesh.rules.yml \
  '  runbook_url: "https://git.example.com/roced/roced/blob/main/docs/operations.md#rocedmeshsloweddown"' ''
expect_failure "an alert without runbook_url" "RocedMeshSlowedDown: runbook_url None is not BASE/docs/operations.md#ANCHOR" \
  $P/roced-mesh.rules.yml
edit docs/operations.md '### RocedPortDown' '### RocedPortIsDown'
expect_failure "an alert whose runbook section is missing" \
  "RocedPortDown: docs/operations.md has no section #rocedportdown" docs/operations.md
edit docs/operations.md '### RocedAgentDown' $'### RocedAgentGone\nStale.\n\n### RocedAgentDown'
expect_failure "a runbook for no alert" "runbook '### RocedAgentGone' is for no alert" docs/operations.md
host_loss_line=$(grep -n '`RocedMeshHostLoss`' "$SRC/docs/fleet.md" | head -n 1 | cut -d: -f1)
edit docs/fleet.md '`RocedMeshHostLoss`' '`RocedMeshHostLost`'
expect_failure "a doc naming an alert that does not exist" \
  "docs/fleet.md:$host_loss_line: RocedMeshHostLost is not an alert of deploy/prometheus" docs/fleet.md
edit $P/roced-alerts.yml 'https://git.example.com/roced/roced/blob/main/docs/operations.md#rocedportdown' \
  'https://docs.example.org/docs/operations.md#rocedportdown'
expect_failure "a runbook base that differs" "runbook_url: more than one base" $P/roced-alerts.yml

edit deploy/container/Containerfile 'COPY proto proto' 'COPY protos protos'
expect_failure "a Containerfile copying a missing path" "COPY protos: no such path in the tree" \
  deploy/container/Containerfile
edit deploy/kubernetes/daemonset.yaml 'image: roced:' 'image: roced:9.'
expect_failure "a DaemonSet image of another version" "the Containerfile builds roced:" \
  deploy/kubernetes/daemonset.yaml

echo "deploy_check: $pass passed, $fail failed"
[ "$fail" = 0 ]
