#!/usr/bin/env bash
# The Prometheus deploy files: the scrape config and the rule files load,
# every alert's firing and non-firing cases pass `promtool test rules`, and
# every mesh recording rule's value is checked there.
# Usage: promtool_rules.sh SOURCE_DIR
set -euo pipefail
SRC=$1
DIR=$SRC/deploy/prometheus
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"

command -v promtool >/dev/null || { echo "SKIP: promtool not installed (apt-get install prometheus)"; exit 77; }
WORK=$(mktemp -d /tmp/roced-promtool.XXXXXX)  # check_quiet's last.out
trap 'rm -rf "$WORK"' EXIT

# names KEY FILE: the sorted names after "KEY:" in FILE (alert, record,
# alertname), one a line.
names() { grep -E "^\s*(- )?$1:" "$2" | sed -E "s/.*$1:\s*//; s/^['\"]//; s/['\"]\s*$//" | sort -u; }

# Each rule file with its test file.
for pair in roced-alerts.yml:roced-alerts.test.yml roced-mesh.rules.yml:roced-mesh.rules.test.yml; do
  rules=${pair%%:*}
  tests=${pair#*:}
  check_quiet "promtool check rules $rules" promtool check rules "$DIR/$rules"
  check_quiet "promtool test rules $tests" promtool test rules "$DIR/$tests"
  # Every alert in the rules file has a test case (a new alert without one
  # must not slip in), and the tests name no alert the file lacks.
  alerts=$(names alert "$DIR/$rules")
  tested=$(names alertname "$DIR/$tests")
  check_quiet "every alert in $rules has test cases" test "$alerts" = "$tested"
  # Every recording rule's value is checked by a promql_expr_test (its
  # name appears in a test's expected labels).
  missing=""
  for r in $(names record "$DIR/$rules"); do
    grep -qE "labels: *'$r\{" "$DIR/$tests" || missing+=" $r"
  done
  check_quiet "every recording rule in $rules has a value check${missing:+ (missing:$missing)}" test -z "$missing"
done
check_quiet "promtool check config prometheus.yml (rule files resolve)" promtool check config "$DIR/prometheus.yml"
# prometheus.yml loads every rule file there is.
for f in "$DIR"/*.yml; do
  case $f in *.test.yml | */prometheus.yml) continue ;; esac
  check_quiet "prometheus.yml loads $(basename "$f")" grep -qE "^\s*- $(basename "$f")\s*$" "$DIR/prometheus.yml"
done

echo
finish
