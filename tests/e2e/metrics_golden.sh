#!/usr/bin/env bash
# The whole /metrics of roced on the fixture tree against the stored file
# tests/fixtures/expected_metrics_fixture.txt: every family's HELP and TYPE,
# every series' name and labels, and every value that does not depend on
# time. A renamed metric or label, a changed help text, a new or vanished
# series fails it. Values that do depend on time (durations, start time,
# counts of periodic runs, the metrics endpoint's own figures, the build's
# version and commit) are replaced by <volatile>; their series still count.
# Usage: metrics_golden.sh BIN_DIR SOURCE_DIR
# With ROCED_UPDATE_GOLDEN=1 in the environment it rewrites the stored file
# from this scrape instead (then review the diff), as the unit tests do
# theirs (tests/fixtures/README.md).
set -euo pipefail
if [ "$#" -gt 2 ]; then
  echo "metrics_golden.sh: unexpected argument '$3'; to rewrite the stored file:" \
    "ROCED_UPDATE_GOLDEN=1 bash tests/e2e/metrics_golden.sh BIN_DIR SOURCE_DIR" >&2
  exit 2
fi
BIN=$1
SRC=$2
GOLDEN=$SRC/tests/fixtures/expected_metrics_fixture.txt
WORK=$(mktemp -d /tmp/roced-golden.XXXXXX)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT

# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"
PORT=$(free_port)
start_fixture_agent "$PORT"
# The start-up reconcile pass has run once the converged gauge reads 1.
for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$PORT/metrics" >"$WORK/metrics.txt" && grep -q '^roced_converged 1' "$WORK/metrics.txt" && break
  sleep 0.1
done

python3 - "$WORK/metrics.txt" >"$WORK/normalized.txt" <<'PY'
import re, sys

VOLATILE_FAMILIES = (
    "roced_metrics_",                    # the endpoint's own figures (earlier scrapes)
    "roced_discovery_duration_seconds",  # how long passes took
    "roced_reconcile_duration_seconds",
    "roced_start_time_seconds",
    "roced_discovery_runs_total",        # periodic and event-driven passes
    "roced_reconcile_runs_total",
    "roced_api_requests_total",          # start-up polls GetState until it answers
)
out, samples = [], []

def flush():
    out.extend(sorted(samples))
    samples.clear()

for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if not line:
        continue
    if line.startswith("#"):
        flush()
        out.append(line)
        continue
    m = re.match(r"^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})? (\S+)$", line)
    if not m:
        raise SystemExit(f"unparsable sample line: {line}")
    name, labels, value = m.group(1), m.group(2) or "", m.group(3)
    if name.startswith(VOLATILE_FAMILIES):
        value = "<volatile>"
    if name == "roced_build_info":
        labels = re.sub(r'(commit|version)="[^"]*"', r'\1="<volatile>"', labels)
    samples.append(f"{name}{labels} {value}")
flush()
print("\n".join(out))
PY

if [ "${ROCED_UPDATE_GOLDEN:-}" = 1 ]; then
  cp "$WORK/normalized.txt" "$GOLDEN"
  echo "metrics_golden: ROCED_UPDATE_GOLDEN=1: wrote $GOLDEN ($(wc -l <"$GOLDEN") lines); review the diff"
  exit 77  # skipped, not passed: nothing was compared
fi
if diff -u "$GOLDEN" "$WORK/normalized.txt" >"$WORK/diff.txt"; then
  ok "/metrics of the fixture tree matches $(basename "$GOLDEN") ($(wc -l <"$GOLDEN") lines)"
else
  cat "$WORK/diff.txt"
  bad "/metrics of the fixture tree differs from $(basename "$GOLDEN") (- stored, + scraped);"
  echo "       if the change is intended: ROCED_UPDATE_GOLDEN=1 bash tests/e2e/metrics_golden.sh BIN_DIR SOURCE_DIR"
fi
finish
