#!/usr/bin/env bash
# Checks systemd/roced.service with systemd's own analyzers: the unit parses
# (systemd-analyze verify, ignoring the absent binary), its exposure score
# from `systemd-analyze security --offline=yes` stays at or below the
# recorded ceiling, so a hardening line removed by accident fails CI, and
# its system-call filter lets mbind(2) through (NUMA placement of probe
# buffers), as systemd itself merges the SystemCallFilter= lines.
# Usage: systemd_security.sh SOURCE_DIR
set -euo pipefail
SRC=$1
CEILING=2.7
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"
command -v systemd-analyze >/dev/null || { echo "SKIP: systemd-analyze not installed"; exit 77; }
WORK=$(mktemp -d)
trap 'rm -rf "$WORK"' EXIT
cp "$SRC/systemd/roced.service" "$WORK/roced.service"
out=$(systemd-analyze security --offline=yes "$WORK/roced.service" 2>&1)
score=$(sed -n 's/.*Overall exposure level for roced.service: \([0-9.]*\).*/\1/p' <<<"$out")
[ -n "$score" ] || { echo "FAIL - could not read the exposure score:"; echo "$out" | tail -5; exit 1; }
echo "systemd-analyze security --offline=yes: exposure $score (ceiling $CEILING)"
if awk -v s="$score" -v c="$CEILING" 'BEGIN { exit !(s > c) }'; then
  bad "exposure $score is above $CEILING"
else
  ok "exposure $score is at or below $CEILING"
fi
# Unknown directives or bad values show up as warnings from verify.
verify=$(systemd-analyze verify "$WORK/roced.service" 2>&1 | grep -v "/usr/bin/roced" || true)
if grep -Eqi "unknown|failed to parse|invalid" <<<"$verify"; then
  bad "systemd-analyze verify:"; echo "$verify"
else
  ok "systemd-analyze verify: no unknown directive or bad value"
fi
# mbind, asked of systemd: in a copy of the unit that also denies every
# other call of @resources, systemd-analyze reports @resources as included
# only when mbind is allowed. The same question about a copy that denies
# mbind must come back the other way, or the check proves nothing.
others=$(systemd-analyze syscall-filter @resources | awk '$1 !~ /^[#@]/ && $1 != "mbind" && NF { print $1 }' | tr '\n' ' ')
[ -n "$others" ] || { echo "FAIL - systemd-analyze syscall-filter @resources listed nothing"; exit 1; }
resources_row() {  # resources_row EXTRA_FILTER_LINE
  cp "$SRC/systemd/roced.service" "$WORK/roced.service"
  printf '[Service]\nSystemCallFilter=~%s\n%s\n' "$others" "$1" >> "$WORK/roced.service"
  systemd-analyze security --offline=yes "$WORK/roced.service" 2>&1 | grep 'SystemCallFilter=~@resources' || true
}
row=$(resources_row "")
echo "with the rest of @resources denied: $row"
if ! grep -q 'mbind is allowed' <<<"$row"; then
  bad "systemd/roced.service's SystemCallFilter= blocks mbind"
elif grep -q 'mbind is allowed' <<<"$(resources_row 'SystemCallFilter=~mbind')"; then
  bad "the mbind check does not notice a filter that denies mbind"
else
  ok "systemd/roced.service's SystemCallFilter= lets mbind through (and a filter denying it is noticed)"
fi
finish
