#!/usr/bin/env bash
# The docs check itself: clean on the real tree; on a scratch copy it fails,
# naming the entry, when one row is removed from each checked table of
# docs/ (a YAML field, a rocectl command, an RPC, a metric family), when a
# bogus row is added, and when a metric's type is wrong.
# Usage: docs_check_test.sh SOURCE_DIR
set -euo pipefail
SRC=$1
WORK=$(mktemp -d /tmp/roced-docs-check.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
pass=0 fail=0
ok() { echo "ok   - $*"; pass=$((pass + 1)); }
bad() { echo "FAIL - $*"; fail=$((fail + 1)); }

if python3 "$SRC/tests/docs_check.py" "$SRC"; then ok "docs/ match the tree"; else bad "docs/ do not match the tree"; fi

# What the check reads, copied once; each case starts from the real docs.
for d in docs proto tools/rocectl tests/fixtures lib agent; do
  mkdir -p "$WORK/$d"
  cp -r "$SRC/$d/." "$WORK/$d/"
done

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

echo "docs_check: $pass passed, $fail failed"
[ "$fail" = 0 ]
