#!/usr/bin/env bash
# rocectl counters against the real roced on a copy of the fixture tree:
# values with stable and driver names, filters, rates of a counter changed
# between two readings, --watch redraws, JSON output, an unknown device.
# Usage: counters_e2e.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
WORK=$(mktemp -d /tmp/roced-counters-e2e.XXXXXX)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"
command -v python3 >/dev/null || { echo "SKIP: python3 not installed"; exit 77; }

cp -a "$SRC/tests/fixtures/sysfs" "$WORK/sysfs"
SOCK=$WORK/roced.sock
start_fixture_agent 0 "$WORK/sysfs"
ctl() { "$BIN/rocectl" --socket "$SOCK" "$@"; }

out=$(ctl counters)
check "counters lists mlx5 CNPs under the stable name with the driver's" \
  grep -Eq '^mlx5_0 +1 +ens1f0 +hw_counters +cnp_sent \(np_cnp_sent\) +- +101201$' <<<"$out"
check "port data is shown in bytes" grep -Eq 'transmit_bytes \(port_xmit_data\) +- +400073786976$' <<<"$out"
check "rxe retransmits come from completer_retry_err" \
  grep -Eq '^rxe0 .* retransmits \(completer_retry_err\) +- +6$' <<<"$out"
check "lifespan is not a counter" bash -c "! grep -q lifespan <<<'$out'"

out=$(ctl counters --device rxe0)
check "--device keeps only that device" bash -c "! grep -q mlx5 <<<'$out' && grep -q '^rxe0' <<<'$out'"

# A counter that moves at 1000/s all through the two readings of --rate
# (2 s apart): its value follows the clock, rewritten every 50 ms, so
# however late either reading comes (TSan on a loaded machine took over a
# second for the first), the counter moved between them at that rate. Each
# value is one pwrite of six digits over the old six (the agent keeps the
# file open and reads it in place: never an empty or half-written value).
# The first reading waits for the mover's first write: python's start-up
# took over a second on a loaded CI machine, and a first reading of the
# untouched value made the counter look slower than it was (447/s).
python3 -c '
import os, sys, time
fd = os.open(sys.argv[1], os.O_WRONLY)
t0 = time.monotonic()
ready = False
while True:
    os.pwrite(fd, b"%06d" % (101201 + int(1000 * (time.monotonic() - t0))), 0)
    if not ready:
        open(sys.argv[2], "w").close()
        ready = True
    time.sleep(0.05)' "$WORK/sysfs/class/infiniband/mlx5_0/ports/1/hw_counters/np_cnp_sent" \
  "$WORK/mover.ready" &
mover=$!
wait_until 10 test -e "$WORK/mover.ready" || { echo "FAIL - the counter mover did not start in 10 s"; exit 1; }
out=$(ctl counters --rate --interval 2s)
kill "$mover"
wait "$mover" 2>/dev/null || true
rate=$(awk '/cnp_sent \(np_cnp_sent\)/ {print $NF}' <<<"$out")
check "--rate shows the counter that moved, about 1000/s ($rate)" \
  python3 -c "import sys; r = float(sys.argv[1]); assert 700 <= r <= 1300, r" "${rate:-0}"
check "--rate hides counters that did not move" test "$(grep -c hw_counters <<<"$out")" = 1

# --watch runs until stopped: it is stopped once it has drawn twice, or after
# 30 s (a TSan-built rocectl and agent on a loaded machine took over 3 s to
# draw twice: a fixed window of 3 s failed in CI).
"$BIN/rocectl" --socket "$SOCK" counters --watch --interval 400ms >"$WORK/watch.txt" &
watcher=$!
drawn_twice_or_gone() { [ "$(grep -c '^Every 400ms' "$WORK/watch.txt")" -ge 2 ] || ! kill -0 "$watcher" 2>/dev/null; }
wait_until 30 drawn_twice_or_gone || true
kill "$watcher" 2>/dev/null || true
wait "$watcher" 2>/dev/null || true
check "--watch redraws every interval" test "$(grep -c '^Every 400ms' "$WORK/watch.txt")" -ge 2

ctl -o json counters --netdev eth0 >"$WORK/c.json"
check "-o json is the GetCountersResponse" python3 - "$WORK/c.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
assert [s["device"] for s in r["sets"]] == ["rxe0"], r["sets"]
names = {c["name"]: c for c in r["sets"][0]["counters"]}
assert names["packet_sequence_errors"]["sourceName"] == "rcvd_seq_err"
assert names["packet_sequence_errors"]["value"] == "11"
PY

set +e
err=$(ctl counters --device mlx5_9 2>&1); rc=$?
set -e
check "unknown device: exit 3 naming it and the devices there" \
  test "$rc" = 3 -a -n "$(grep "no RDMA device 'mlx5_9'.*mlx5_0, mlx5_1, mlx5_2, rxe0" <<<"$err")"
set +e
ctl counters extra >/dev/null 2>&1; rc=$?
set -e
check "counters with an argument is a usage error (exit 2)" test "$rc" = 2

echo
finish cat "$WORK/roced.log"
