#!/usr/bin/env bash
# Checks systemd/roced.service with systemd's own analyzers: the unit parses
# (systemd-analyze verify, ignoring the absent binary) and its exposure score
# from `systemd-analyze security --offline=yes` stays at or below the
# recorded ceiling, so a hardening line removed by accident fails CI.
set -euo pipefail
SRC=$1
CEILING=3.0
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$SRC/systemd/roced.service" "$WORK/roced.service"
out=$(systemd-analyze security --offline=yes "$WORK/roced.service" 2>&1)
score=$(sed -n 's/.*Overall exposure level for roced.service: \([0-9.]*\).*/\1/p' <<<"$out")
[ -n "$score" ] || { echo "could not read the exposure score:"; echo "$out" | tail -5; exit 1; }
echo "systemd-analyze security --offline=yes: exposure $score (ceiling $CEILING)"
if awk -v s="$score" -v c="$CEILING" 'BEGIN { exit !(s > c) }'; then
  echo "FAIL: exposure $score is above $CEILING"; exit 1
fi
# Unknown directives or bad values show up as warnings from verify.
verify=$(systemd-analyze verify "$WORK/roced.service" 2>&1 | grep -v "/usr/bin/roced" || true)
if grep -Eqi "unknown|failed to parse|invalid" <<<"$verify"; then
  echo "FAIL: systemd-analyze verify:"; echo "$verify"; exit 1
fi
echo "systemd_security: 2 passed, 0 failed"
