#!/usr/bin/env bash
# The docs check itself: clean on the real tree; on a scratch copy it fails,
# naming the entry, when one row is removed from each checked table of
# docs/ (a YAML field, a rocectl command, an RPC, a metric family), when a
# bogus row is added, and when a metric's type is wrong; and, for the
# references, on a link to a missing heading or file, a doc naming a source
# file that moved, a section or a doc that does not exist, a flag roced or
# rocectl does not register (or no longer does), an unknown diagnose check,
# and a capability the unit grants that operations.md does not name.
# Usage: docs_check_test.sh SOURCE_DIR
set -euo pipefail
SRC=$1
WORK=$(mktemp -d /tmp/roced-docs-check.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
pass=0 fail=0
ok() { echo "ok   - $*"; pass=$((pass + 1)); }
bad() { echo "FAIL - $*"; fail=$((fail + 1)); }

if python3 "$SRC/tests/docs_check.py" "$SRC"; then ok "docs/ match the tree"; else bad "docs/ do not match the tree"; fi

# The tree without build directories (docs name files all over it), copied
# once; each case starts from the real files.
tar -C "$SRC" --exclude='./build*' --exclude=./.git -cf - . | tar -C "$WORK" -xf -

# expect_failure NAME DOC WANT: the check on $WORK must exit 1 and print WANT.
expect_failure() {
  local name=$1 doc=$2 want=$3 out rc
  set +e
  out=$(python3 "$SRC/tests/docs_check.py" "$WORK" 2>&1); rc=$?
  set -e
  if [ "$rc" = 1 ] && grep -qF -- "$want" <<<"$out"; then
    ok "$name fails the check: $want"
  else
    bad "$name was not caught (exit $rc, wanted '$want'): $out"
  fi
  cp "$SRC/docs/$doc" "$WORK/docs/$doc"
}

# remove_row DOC ENTRY: delete the table row whose first cell is `ENTRY`.
remove_row() {
  python3 - "$WORK/docs/$1" "$2" <<'PY'
import sys
path, entry = sys.argv[1], sys.argv[2]
lines = open(path).read().split("\n")
kept = [l for l in lines if not l.startswith("| `%s` |" % entry)]
assert len(kept) == len(lines) - 1, "no single row for " + entry
open(path, "w").write("\n".join(kept))
PY
}

remove_row configuration.md 'interfaces[].qos.pfc.priorities'
expect_failure "a YAML field without its row" configuration.md "missing fields entry: interfaces[].qos.pfc.priorities"
remove_row api.md 'rocectl diagnose'
expect_failure "a rocectl command without its row" api.md "missing commands entry: rocectl diagnose"
remove_row api.md 'ProbePeer.Describe'
expect_failure "an RPC without its row" api.md "missing rpcs entry: ProbePeer.Describe"
remove_row metrics.md 'roced_converged'
expect_failure "a fixture metric without its row" metrics.md "missing metrics entry: roced_converged"
remove_row metrics.md 'roced_mesh_rtt_seconds'
expect_failure "a lab-only metric without its row" metrics.md "missing metrics entry: roced_mesh_rtt_seconds"

# Bogus rows: the doc names what the tree does not define.
sed -i 's/^| `mesh.pod` |.*/&\n| `mesh.rack` | none | bogus |/' "$WORK/docs/configuration.md"
expect_failure "a bogus YAML field" configuration.md "fields entry mesh.rack is not defined by the tree"
sed -i 's/^| `rocectl help` |.*/&\n| `rocectl reboot` | none | bogus |/' "$WORK/docs/api.md"
expect_failure "a bogus rocectl command" api.md "commands entry rocectl reboot is not defined by the tree"
sed -i 's/^| `roced_converged` |.*/&\n| `roced_bogus_total` | counter | none | lab | bogus |/' "$WORK/docs/metrics.md"
expect_failure "a bogus metric family" metrics.md "metrics entry roced_bogus_total is not defined by the tree"
sed -i 's/^| `roced_converged` | gauge |/| `roced_converged` | counter |/' "$WORK/docs/metrics.md"
expect_failure "a metric of the wrong type" metrics.md "roced_converged is a gauge in /metrics, the doc says counter"

# A field added to the schema without its row.
sed -i 's/^  string pod = 2;/&\n  string rack = 3;/' "$WORK/proto/roced/v1/config.proto"
expect_failure "a new config.proto field" configuration.md "missing fields entry: mesh.rack"
cp "$SRC/proto/roced/v1/config.proto" "$WORK/proto/roced/v1/config.proto"

# References: every breakage below at once, on one run of the check (they
# touch different files and each has its own message), to spare the CPU of
# a run per case.
edit() {  # edit FILE OLD NEW: the first OLD in the scratch copy's FILE (literally)
  local f=$WORK/$1 text
  text=$(<"$f")
  [[ $text == *"$2"* ]] || { echo "FAIL - $1 has no '$2'"; exit 1; }
  printf '%s\n' "${text/"$2"/"$3"}" >"$f"
}
cases=()  # NAME|WANT
edit README.md '(docs/api.md#probe-probes)' '(docs/api.md#probe-and-probes)'
cases+=("a link to a heading that does not exist|link to docs/api.md#probe-and-probes: no such heading")
edit docs/fleet.md '[api.md](api.md' '[api.md](apis.md'
cases+=("a link to a file that does not exist|link to apis.md#apply-confirm: no such file")
# A source file moved; the doc still names the old place.
mv "$WORK/lib/model/readiness.h" "$WORK/lib/model/ready.h"
mv "$WORK/lib/model/readiness.cc" "$WORK/lib/model/ready.cc"
cases+=("a doc naming a source file that moved|\`lib/model/readiness\`: no such file or directory")
# A heading renamed; a comment elsewhere still names it.
edit docs/operations.md '## Alerts: what to do' '## Alerts'
cases+=("a section a comment names, renamed|deploy/prometheus/prometheus.yml:2: docs/operations.md has no section \"Alerts: what to do\"")
edit systemd/roced.env '# `systemctl restart roced`' '# docs/endpoints.md; `systemctl restart roced`'
cases+=("a comment naming a doc that does not exist|systemd/roced.env:3: docs/endpoints.md: no such file")
edit docs/operations.md 'rocectl ready                                   #' 'rocectl ready --wait                            #'
cases+=("a rocectl flag that does not exist|rocectl has no flag --wait")
edit agent/flags.cc 'p->AddBool("check-config",' 'p->AddBool("validate-config",'
cases+=("a roced flag the code no longer has|roced has no flag --check-config")
edit docs/operations.md 'rocectl diagnose --checks pcie`' 'rocectl diagnose --checks pcie_link`'
cases+=("an unknown diagnose check|diagnose has no check pcie_link")
edit systemd/roced.service 'CapabilityBoundingSet=CAP_NET_ADMIN' 'CapabilityBoundingSet=CAP_SYS_NICE CAP_NET_ADMIN'
cases+=("a capability the unit grants and the docs do not name|does not name CAP_SYS_NICE, which the unit grants")
set +e
out=$(python3 "$SRC/tests/docs_check.py" "$WORK" 2>&1); rc=$?
set -e
for c in "${cases[@]}"; do
  name=${c%%|*} want=${c#*|}
  if [ "$rc" = 1 ] && grep -qF -- "$want" <<<"$out"; then
    ok "$name fails the check: $want"
  else
    bad "$name was not caught (exit $rc, wanted '$want')"
  fi
done
[ "$fail" = 0 ] || echo "$out"

echo "docs_check: $pass passed, $fail failed"
[ "$fail" = 0 ]
