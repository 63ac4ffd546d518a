# shellcheck shell=bash
# Shared by the e2e scripts (tests/e2e/*.sh): how a test reports (ok, bad,
# check, check_quiet, finish) and the helpers of those that run roced on the
# fixture tree. Source it early, once SRC (the source tree) is set: sourcing
# only defines functions and variables (pass=0, fail=0) and sources
# tests/wait_until.sh. BIN (the binaries) and WORK (a scratch directory the
# caller removes) are read when a function runs.

# wait_until SECS CMD... (tests/wait_until.sh).
# shellcheck source=tests/wait_until.sh
source "$SRC/tests/wait_until.sh"

# --- reporting -----------------------------------------------------------------
# One line per result, "ok   - WHAT" or "FAIL - WHAT", counted in pass and
# fail; finish prints the totals and gives the exit status.
pass=0
fail=0
ok() { echo "ok   - $*"; pass=$((pass + 1)); }
bad() { echo "FAIL - $*"; fail=$((fail + 1)); }

# check WHAT CMD...: ok WHAT if CMD succeeds, else bad WHAT; CMD's output
# goes through as it comes.
check() {
  local what=$1
  shift
  if "$@"; then ok "$what"; else bad "$what"; fi
}

# check_quiet WHAT CMD...: as check, but CMD's output (stdout and stderr) is
# kept in $WORK/last.out and shown, indented, under the FAIL line only.
check_quiet() {
  local what=$1
  shift
  if "$@" >"$WORK/last.out" 2>&1; then
    ok "$what"
  else
    bad "$what"
    sed 's/^/    /' "$WORK/last.out"
  fi
}

# finish [CMD...]: the summary line, "NAME: P passed, F failed" (NAME: the
# script's file name without .sh). If anything failed, runs CMD if given
# (say, a function that shows the agent's log) and exits 1; else returns 0,
# the script's exit status when finish is its last command.
# shellcheck disable=SC2120  # CMD is optional
finish() {
  echo "$(basename "$0" .sh): $pass passed, $fail failed"
  if [ "$fail" -ne 0 ]; then
    if [ "$#" -gt 0 ]; then "$@" || true; fi
    exit 1
  fi
}

# tls_fixture_files [OTHER_ROLE]: the test CA's certificates in $WORK/certs
# (C names the directory), minimal.yaml as $WORK/roced.yaml and
# $WORK/access.yaml: admin.test admin, viewer.test viewer, the socket's
# group admin and, given OTHER_ROLE, every other local user that role.
# shellcheck disable=SC2120  # OTHER_ROLE is optional
tls_fixture_files() {
  C=$WORK/certs
  bash "$SRC/tests/tls/make_certs.sh" "$C" >/dev/null
  cp "$SRC/deploy/examples/minimal.yaml" "$WORK/roced.yaml"
  {
    printf 'apiVersion: roced/v1\nkind: AccessPolicy\nidentities:\n'
    printf '  - {match: admin.test, roles: [admin]}\n  - {match: viewer.test, roles: [viewer]}\n'
    printf 'socket:\n  group_roles: [admin]\n'
    if [ -n "${1:-}" ]; then printf '  other_roles: [%s]\n' "$1"; fi
  } >"$WORK/access.yaml"
}

# A free loopback TCP port.
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# start_fixture_agent METRICS_PORT [SYSFS_ROOT]: roced ($ROCED, default
# $BIN/roced) on SYSFS_ROOT (default tests/fixtures/sysfs) with the minimal
# config, metrics on METRICS_PORT (0: any), its socket and state in WORK;
# sets PID and returns once `rocectl status` answers (exit 1, with its log,
# if roced dies first). Arguments in the array ROCED_ARGS, if set, are
# added to roced's command line.
start_fixture_agent() {
  cp "$SRC/deploy/examples/minimal.yaml" "$WORK/roced.yaml"
  "${ROCED:-$BIN/roced}" --sysfs-root "${2:-$SRC/tests/fixtures/sysfs}" --config "$WORK/roced.yaml" \
    --grpc-listen 127.0.0.1:0 --insecure --metrics-listen "127.0.0.1:$1" \
    --socket "$WORK/roced.sock" --state-dir "$WORK/state" ${ROCED_ARGS[@]+"${ROCED_ARGS[@]}"} \
    2>"$WORK/roced.log" &
  PID=$!
  await_agent_socket || { echo "FAIL - roced did not answer within 10 s"; exit 1; }
}

# await_agent_socket: waits up to 10 s for roced ($PID) to answer `rocectl
# status` on $WORK/roced.sock; exits 1, with its log, if roced dies first;
# returns 1 if it never answers.
await_agent_socket() {
  for _ in $(seq 1 100); do
    "$BIN/rocectl" --socket "$WORK/roced.sock" --timeout 1s status >/dev/null 2>&1 && return 0
    kill -0 "$PID" 2>/dev/null || { cat "$WORK/roced.log"; echo "FAIL - roced did not start"; exit 1; }
    sleep 0.1
  done
  return 1
}

# tcp WHO ARGS...: rocectl over TCP ($GRPC_PORT) with the test CA's
# certificate for WHO (tls_fixture_files).
tcp() {
  local who=$1; shift
  "$BIN/rocectl" --target "127.0.0.1:$GRPC_PORT" --ca "$C/ca.crt" --cert "$C/$who.crt" --key "$C/$who.key" "$@"
}
