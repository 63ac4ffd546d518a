#!/usr/bin/env bash
# End-to-end access control with the real binaries and certificates made by
# openssl now: roced refusing plaintext TCP without --insecure (and
# --insecure off loopback), rocectl's one-line reasons (missing or expired
# certificate, wrong CA, a certificate the agent does not trust, no
# certificate, a role that is not enough), the unix socket's callers by
# their process credentials (setpriv to other users and groups), the audit
# log and the request counter, the TLS copies gRPC reads (a FIFO put in a
# certificate's place is refused and blocks nothing).
# Usage: auth_e2e.sh BIN_DIR SOURCE_DIR   (as root: it changes users)
set -euo pipefail
BIN=$1
SRC=$2
FIXTURE=$SRC/tests/fixtures/sysfs
WORK=$(mktemp -d /tmp/roced-auth.XXXXXX)
chmod 755 "$WORK"
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"

[ "$(id -u)" = 0 ] || { echo "SKIP: needs root (runs rocectl as other users)"; exit 77; }
command -v setpriv >/dev/null || { echo "SKIP: setpriv (util-linux) not installed"; exit 77; }

tls_fixture_files viewer

# --- start-up refusals -------------------------------------------------------
set +e
out=$("$BIN/roced" --sysfs-root "$FIXTURE" --config "$WORK/roced.yaml" --grpc-listen 127.0.0.1:0 \
  --metrics-listen '' --socket '' --state-dir "$WORK/s0" 2>&1); rc=$?
check_quiet "explicit TCP without TLS or --insecure: exit 1" test "$rc" = 1
check_quiet "... naming the flags to add" grep -q "needs --tls-cert, --tls-key and --tls-client-ca (mutual TLS), or --insecure" <<<"$out"
out=$("$BIN/roced" --sysfs-root "$FIXTURE" --config "$WORK/roced.yaml" --grpc-listen 0.0.0.0:0 --insecure \
  --metrics-listen '' --socket '' --state-dir "$WORK/s0" 2>&1); rc=$?
check_quiet "--insecure off loopback: exit 1 asking for --insecure-allow-remote" \
  test "$rc" = 1 -a -n "$(grep -- '--insecure-allow-remote' <<<"$out")"
out=$("$BIN/roced" --sysfs-root "$FIXTURE" --config "$WORK/roced.yaml" --grpc-listen 127.0.0.1:0 \
  --tls-cert "$C/expired.crt" --tls-key "$C/expired.key" --tls-client-ca "$C/ca.crt" \
  --metrics-listen '' --socket '' --state-dir "$WORK/s0" 2>&1); rc=$?
check_quiet "an expired server certificate stops start-up naming the file" \
  test "$rc" = 1 -a -n "$(grep -- "--tls-cert $C/expired.crt: certificate /CN=expired.test expired on" <<<"$out")"
out=$("$BIN/roced" --sysfs-root "$FIXTURE" --config "$WORK/roced.yaml" --access-file "$WORK/nope.yaml" \
  --grpc-listen '' --metrics-listen '' --socket '' --state-dir "$WORK/s0" 2>&1); rc=$?
check_quiet "a missing access file stops start-up naming it" \
  test "$rc" = 1 -a -n "$(grep -- "$WORK/nope.yaml" <<<"$out")"
set -e

# --- the agent under mutual TLS ----------------------------------------------
GRPC_PORT=$(free_port)
METRICS_PORT=$(free_port)
"$BIN/roced" --sysfs-root "$FIXTURE" --config "$WORK/roced.yaml" --grpc-listen "127.0.0.1:$GRPC_PORT" \
  --tls-cert "$C/server.crt" --tls-key "$C/server.key" --tls-client-ca "$C/ca.crt" \
  --access-file "$WORK/access.yaml" --socket-group nogroup --metrics-listen "127.0.0.1:$METRICS_PORT" \
  --socket "$WORK/roced.sock" --state-dir "$WORK/state" 2>"$WORK/roced.log" &
PID=$!
await_agent_socket || true  # the checks below say what does not answer

one_line() {  # one_line PATTERN CMD...: exit 3 (failed) and exactly one line matching PATTERN
  local pattern=$1; shift
  local out rc
  set +e; out=$("$@" 2>&1); rc=$?; set -e
  [ "$rc" = 3 ] && [ "$(wc -l <<<"$out")" = 1 ] && grep -q -- "$pattern" <<<"$out" || { echo "  got (rc $rc): $out"; return 1; }
}
check_quiet "admin certificate: status" tcp admin status
check_quiet "admin certificate: apply" tcp admin apply -f "$WORK/roced.yaml"
check_quiet "viewer certificate: status" tcp viewer status
check_quiet "viewer apply: one line naming the method and the role needed" \
  one_line "permission denied by the agent at 127.0.0.1:$GRPC_PORT: /roced.v1.Agent/ApplyConfig needs the admin role; viewer.test has viewer" \
  tcp viewer apply -f "$WORK/roced.yaml"
check_quiet "no client certificate: one line asking for one" \
  one_line "the agent requires a client certificate: give --cert and --key" \
  "$BIN/rocectl" --target "127.0.0.1:$GRPC_PORT" --ca "$C/ca.crt" status
check_quiet "a certificate of another CA: the agent refused it" \
  one_line "the agent refused this client's certificate" tcp other status
check_quiet "an expired certificate: refused before connecting, with its date" \
  one_line "--cert $C/expired.crt: certificate /CN=expired.test expired on" tcp expired status
check_quiet "a missing certificate file: named" \
  one_line "--cert /nonexistent.crt: " "$BIN/rocectl" --target "127.0.0.1:$GRPC_PORT" --ca "$C/ca.crt" \
  --cert /nonexistent.crt --key "$C/admin.key" status
check_quiet "the wrong --ca: the agent's certificate is not trusted by it" \
  one_line "the agent's certificate is not trusted by --ca $C/other-ca.crt" \
  "$BIN/rocectl" --target "127.0.0.1:$GRPC_PORT" --ca "$C/other-ca.crt" --cert "$C/admin.crt" --key "$C/admin.key" status
check_quiet "--target without --ca: one line saying what to give" \
  one_line "--target uses mutual TLS: give --ca" "$BIN/rocectl" --target "127.0.0.1:$GRPC_PORT" status
check_quiet "plaintext to the TLS port: one line suggesting TLS" \
  one_line "drop --insecure and give --ca" "$BIN/rocectl" --target "127.0.0.1:$GRPC_PORT" --insecure --timeout 3s status
check_quiet "the environment gives rocectl its defaults" \
  env ROCECTL_TARGET="127.0.0.1:$GRPC_PORT" ROCECTL_CA="$C/ca.crt" ROCECTL_CERT="$C/admin.crt" \
  ROCECTL_KEY="$C/admin.key" "$BIN/rocectl" status

# --- the unix socket: by process credentials ----------------------------------
sock() { "$BIN/rocectl" --socket "$WORK/roced.sock" "$@"; }
check_quiet "socket is group nogroup, mode 0666 (others have a role)" test "$(stat -c '%G %a' "$WORK/roced.sock")" = "nogroup 666"
check_quiet "root on the socket: apply (admin)" sock apply -f "$WORK/roced.yaml"
check_quiet "a member of --socket-group: apply (admin)" \
  setpriv --reuid=65534 --regid=65534 --clear-groups "$BIN/rocectl" --socket "$WORK/roced.sock" apply -f "$WORK/roced.yaml"
check_quiet "another user: status (socket.other_roles viewer)" \
  setpriv --reuid=1 --regid=1 --clear-groups "$BIN/rocectl" --socket "$WORK/roced.sock" status
check_quiet "another user: apply refused naming its credentials" \
  one_line "needs the admin role; unix uid 1 gid 1 pid" \
  setpriv --reuid=1 --regid=1 --clear-groups "$BIN/rocectl" --socket "$WORK/roced.sock" apply -f "$WORK/roced.yaml"
check_quiet "supplementary group membership counts" \
  setpriv --reuid=1 --regid=1 --groups=65534 "$BIN/rocectl" --socket "$WORK/roced.sock" apply -f "$WORK/roced.yaml"

# --- the record ------------------------------------------------------------------
A=$WORK/state/audit.log
R=$WORK/state/refusals.log
check_quiet "audit log: the admin's apply with its identity" grep -q '"identity":"admin.test","transport":"tls","roles":"admin","method":"/roced.v1.Agent/ApplyConfig","code":"OK"' "$A"
check_quiet "refusal log: the viewer's refused apply" grep -q '"identity":"viewer.test","transport":"tls","roles":"viewer","method":"/roced.v1.Agent/ApplyConfig","code":"PERMISSION_DENIED"' "$R"
check_quiet "refusal log: the other user's refused apply" grep -q '"identity":"unix uid 1 gid 1 pid [0-9]*","transport":"unix","roles":"viewer","method":"/roced.v1.Agent/ApplyConfig","code":"PERMISSION_DENIED"' "$R"
check_quiet "audit log: no refusal among the changes" bash -c '! grep -q PERMISSION_DENIED "$1"' _ "$A"
check_quiet "audit and refusal logs: every line is JSON" python3 -c 'import json,sys; [json.loads(l) for f in sys.argv[1:] for l in open(f)]' "$A" "$R"
check_quiet "audit and refusal logs are 0600" test "$(stat -c %a "$A") $(stat -c %a "$R")" = "600 600"
metrics=$(curl -sf "http://127.0.0.1:$METRICS_PORT/metrics")
check_quiet "roced_api_requests_total counts the refusal by method, code and role" \
  grep -q 'roced_api_requests_total{code="PERMISSION_DENIED",method="roced.v1.Agent/ApplyConfig",role="viewer"} 2' <<<"$metrics"
check_quiet "... and no call without a certificate reached the API (refused at the handshake)" \
  test -z "$(grep 'roced_api_requests_total{code="UNAUTHENTICATED"' <<<"$metrics")"
check_quiet "roced_api_refusals_total counts both refusals of the viewer's apply" \
  grep -q 'roced_api_refusals_total{code="PERMISSION_DENIED",method="roced.v1.Agent/ApplyConfig"} 2' <<<"$metrics"
check_quiet "GetState shows who applied the config in force" \
  grep -q '"appliedBy": "admin.test"' <<<"$(sock -o json status)"

# --- the TLS files gRPC reads: roced's copies, each read bounded -----------------
check_quiet "gRPC is given roced's copies: state/tls is 0700 and its cert.pem is --tls-cert's" \
  test "$(stat -c %a "$WORK/state/tls")" = 700 -a "$(cmp -s "$WORK/state/tls/cert.pem" "$C/server.crt" && echo same)" = same
mv "$C/server.crt" "$C/server.crt.good"
mkfifo "$C/server.crt"
for _ in $(seq 1 150); do grep -q "is a FIFO" "$WORK/roced.log" && break; sleep 0.1; done
check_quiet "a FIFO in --tls-cert's place is refused at the next re-check (10 s), naming the flag and file" \
  grep -q -- "were not taken .*: --tls-cert $C/server.crt: PEM file $C/server.crt is a FIFO" "$WORK/roced.log"
check_quiet "... calls still answer, with the last good certificate" tcp admin status
t0=$(date +%s%N)
kill "$PID"; wait "$PID" 2>/dev/null || true
stop_ms=$((($(date +%s%N) - t0) / 1000000))
check_quiet "... and SIGTERM stops roced at once (${stop_ms} ms; the FIFO blocks no thread)" test "$stop_ms" -lt 5000
check_quiet "... and its copies are removed on the way out" test ! -e "$WORK/state/tls/key.pem"
rm "$C/server.crt"
mv "$C/server.crt.good" "$C/server.crt"

# --- the default policy: others cannot even connect ---------------------------------
"$BIN/roced" --sysfs-root "$FIXTURE" --config "$WORK/roced.yaml" --metrics-listen '' \
  --socket "$WORK/roced.sock" --state-dir "$WORK/state2" 2>"$WORK/roced2.log" &
PID=$!
for _ in $(seq 1 100); do sock --timeout 1s status >/dev/null 2>&1 && break; sleep 0.1; done
check_quiet "default: socket mode 0660, root's group" test "$(stat -c '%G %a' "$WORK/roced.sock")" = "root 660"
check_quiet "default: another user is refused at connect, one line saying so" \
  one_line "permission denied on unix:$WORK/roced.sock" \
  setpriv --reuid=1 --regid=1 --clear-groups "$BIN/rocectl" --socket "$WORK/roced.sock" status
check_quiet "default: the TCP listener is not opened without TLS, and the log says why" \
  grep -q "not opened: it needs --tls-cert" "$WORK/roced2.log"

finish
