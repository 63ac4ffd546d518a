#!/usr/bin/env bash
# The flow-control stall against the gRPC API, with the real binaries and a
# raw HTTP/2 client (grpc_stall.py, python3-h2): an attacker that opens
# streams with an HTTP/2 window of 0 and never reads must not hold every
# thread of the gRPC servers (every call, on TCP and on the unix socket,
# would fail "Server Threadpool Exhausted" while /readyz said 200).
#   (a) a TLS client without a certificate is refused at the handshake;
#   (b) an authenticated caller (viewer) stalling 3 connections x 100
#       GetCounters calls: `rocectl --socket version` and a TCP call by
#       another identity (admin) answer within 2 s, the stalling identity
#       gets RESOURCE_EXHAUSTED naming the per-identity limit, the agent's
#       threads stay bounded, /readyz fails naming the limit;
#   (c) after the send-stall bound (20 s) the stalled calls are cancelled:
#       threads back near the start, /readyz 200, while the attacker still
#       holds its connections.
# Prints the thread counts and the socket call's latency.
# Usage: grpc_stall_e2e.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
WORK=$(mktemp -d /tmp/roced-stall.XXXXXX)
PID=
STALL=
cleanup() {
  [ -n "$STALL" ] && kill "$STALL" 2>/dev/null || true
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"

PY=
for p in python3 /usr/bin/python3; do
  if "$p" -c 'import h2' 2>/dev/null; then PY=$p; break; fi
done
[ -n "$PY" ] || { echo "SKIP: python3-h2 not installed (scripts/setup-deps.sh)"; exit 77; }

tls_fixture_files

GRPC_PORT=$(free_port)
METRICS_PORT=$(free_port)
"$BIN/roced" --sysfs-root "$SRC/tests/fixtures/sysfs" --config "$WORK/roced.yaml" \
  --grpc-listen "127.0.0.1:$GRPC_PORT" --tls-cert "$C/server.crt" --tls-key "$C/server.key" \
  --tls-client-ca "$C/ca.crt" --access-file "$WORK/access.yaml" --metrics-listen "127.0.0.1:$METRICS_PORT" \
  --socket "$WORK/roced.sock" --state-dir "$WORK/state" 2>"$WORK/roced.log" &
PID=$!
await_agent_socket || true  # the checks below say what does not answer
threads() { ls "/proc/$PID/task" | wc -l; }
readyz() { curl -s -o "$WORK/readyz" -w '%{http_code}' "http://127.0.0.1:$METRICS_PORT/readyz"; }
# within2s CMD...: CMD's call succeeds within rocectl's own 2 s deadline; the
# whole command (process start and TLS included) within 5 s of the clock, as
# CI runs this beside sanitizer builds (a start can take 3 s there).
LAST_MS=-1
within2s() {
  local t0 t1
  LAST_MS=-1
  t0=$(date +%s%N)
  timeout 6 "$@" --timeout 2s version >"$WORK/within.out" 2>&1 || { cat "$WORK/within.out"; return 1; }
  t1=$(date +%s%N)
  LAST_MS=$(((t1 - t0) / 1000000))
  [ "$LAST_MS" -lt 5000 ]
}
sleep 1
BEFORE=$(threads)

# --- (a) no certificate: refused at the handshake ----------------------------
check_quiet "a TLS client without a certificate is refused at the handshake" \
  "$PY" "$SRC/tests/e2e/grpc_stall.py" nocert --target "127.0.0.1:$GRPC_PORT" --ca "$C/ca.crt"

# --- (b) an authenticated caller stalls 300 calls ----------------------------
"$PY" "$SRC/tests/e2e/grpc_stall.py" stall --target "127.0.0.1:$GRPC_PORT" --ca "$C/ca.crt" \
  --cert "$C/viewer.crt" --key "$C/viewer.key" --path /roced.v1.Agent/GetCounters \
  --connections 3 --streams 100 --hold 120 --report "$WORK/stall.json" >"$WORK/stall.log" 2>&1 &
STALL=$!
refused() {  # the stalling identity got RESOURCE_EXHAUSTED (8) naming the limit
  "$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); sys.exit(0 if r["opened"] == 300 and r["status"].get("8", 0) > 0 and "at most 32 at once per caller" in r["messages"]["8"] else 1)' "$WORK/stall.json" 2>/dev/null
}
wait_until 15 refused || true
sleep 2  # let every call that will block, block
DURING=$(threads)
check_quiet "the stalling identity gets RESOURCE_EXHAUSTED naming the per-identity limit" refused
echo "     stall report: $(cat "$WORK/stall.json" 2>/dev/null)"
check_quiet "rocectl --socket version answers within 2 s during the stall" within2s "$BIN/rocectl" --socket "$WORK/roced.sock"
SOCKET_MS=$LAST_MS
check_quiet "another identity (admin) answers over TCP within 2 s during the stall" \
  within2s "$BIN/rocectl" --target "127.0.0.1:$GRPC_PORT" --ca "$C/ca.crt" --cert "$C/admin.crt" --key "$C/admin.key"
TCP_MS=$LAST_MS
check_quiet "the stalling identity's next call is refused naming the limit" \
  grep -q "too many calls in flight from viewer.test: at most 32" <(tcp viewer --timeout 2s version 2>&1 || true)
check_quiet "the agent's threads stay bounded during the stall ($BEFORE before, $DURING during)" \
  test "$DURING" -le $((BEFORE + 32 + 16))
check_quiet "/readyz fails during the stall, naming the limit" \
  test "$(readyz)" = 503 -a -n "$(grep "\[-\]grpc failed: refusing calls: too many calls in flight from viewer.test" "$WORK/readyz")"

# --- (c) the send-stall bound frees the threads --------------------------------
recovered() { [ "$(readyz)" = 200 ] && [ "$(threads)" -le $((BEFORE + 8)) ]; }
wait_until 40 recovered || true
AFTER=$(threads)
check_quiet "after the 20 s send-stall bound the stalled calls are cancelled: threads $AFTER (started $BEFORE)" \
  test "$AFTER" -le $((BEFORE + 8))
check_quiet "... and /readyz is 200 again" test "$(readyz)" = 200
check_quiet "... while the stalling client still holds its connections" kill -0 "$STALL"
check_quiet "the agent logged the cancelled sends" grep -q "whose client read nothing for 20s" "$WORK/roced.log"

echo "threads: $BEFORE before, $DURING during the stall, $AFTER after the stall bound;" \
  "rocectl --socket version ${SOCKET_MS}ms, admin over TCP ${TCP_MS}ms during the stall"
finish
