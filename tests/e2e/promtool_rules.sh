#!/usr/bin/env bash
# The Prometheus deploy files: the scrape config and alert rules load, and
# every alert's firing and non-firing cases pass `promtool test rules`.
# Usage: promtool_rules.sh SOURCE_DIR
set -euo pipefail
SRC=$1
DIR=$SRC/deploy/prometheus

command -v promtool >/dev/null || { echo "SKIP: promtool not installed (apt-get install prometheus)"; exit 77; }

pass=0
fail=0
check() {
  local what=$1
  shift
  if out=$("$@" 2>&1); then
    echo "ok   - $what"
    pass=$((pass + 1))
  else
    echo "FAIL - $what"
    echo "$out" | sed 's/^/    /'
    fail=$((fail + 1))
  fi
}

check "promtool check rules roced-alerts.yml" promtool check rules "$DIR/roced-alerts.yml"
check "promtool check config prometheus.yml (rule files resolve)" promtool check config "$DIR/prometheus.yml"
check "promtool test rules roced-alerts.test.yml" promtool test rules "$DIR/roced-alerts.test.yml"

# Every alert in the rules file has a test case (a new alert without one
# must not slip in).
alerts=$(grep -E '^\s*- alert:' "$DIR/roced-alerts.yml" | sed -E 's/.*alert:\s*//' | sort -u)
tested=$(grep -E '^\s*alertname:' "$DIR/roced-alerts.test.yml" | sed -E 's/.*alertname:\s*//' | sort -u)
check "every alert has test cases" test "$alerts" = "$tested"

echo
echo "promtool_rules: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
