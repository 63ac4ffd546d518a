#!/usr/bin/env bash
# Files that are not regular files, or too large, are refused before they
# are read, quickly and with the reason naming the file (and the bound), by
# the real binaries: /dev/zero (once read until memory ran out), a FIFO
# (once blocked on), a directory, a symlink to /dev/zero and a sparse file
# over the bound, as each file roced and rocectl read:
#   roced   --config (--check-config), --access-file, --web.config.file and
#           the files it names (tls_server_config cert_file/key_file/
#           client_ca_file), --tls-client-ca/--tls-cert/--tls-key (checked
#           before gRPC's FileWatcherCertificateProvider, which reads them
#           itself without a bound, is built)
#   rocectl apply -f, --ca/--cert (also without --target: the peers'
#           credentials), rollout status --state (the snapshot and its
#           journal)
# rocectl refuses before it connects (--socket names nothing). roced
# --check-config --config /dev/zero is timed: under 1 s.
# Usage: file_reads_e2e.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
WORK=$(mktemp -d /tmp/roced-filereads-e2e.XXXXXX)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"
mkfifo "$WORK/fifo"
mkdir "$WORK/dir"
ln -s /dev/zero "$WORK/zero-link"
truncate -s $((1048576 + 1)) "$WORK/big.yaml"

# expect WHAT PATTERN CMD...: CMD exits non-zero within 10 s, its stderr matching PATTERN
# (killed 2 s after that: a roced blocked on a FIFO holds SIGTERM).
expect() {
  local what=$1 pattern=$2 rc=0
  shift 2
  timeout -k 2 10 "$@" >"$WORK/out" 2>&1 || rc=$?
  if [ "$rc" != 0 ] && [ "$rc" != 124 ] && [ "$rc" != 137 ] && grep -q -- "$pattern" "$WORK/out"; then
    ok "$what"
  else
    bad "$what (exit $rc)"; sed 's/^/    /' "$WORK/out"
  fi
}

REG="a regular file is required"
expect "roced --check-config /dev/zero" "config file /dev/zero is a character device; $REG" \
  "$BIN/roced" --check-config --config /dev/zero
expect "roced --check-config FIFO" "config file $WORK/fifo is a FIFO; $REG" \
  "$BIN/roced" --check-config --config "$WORK/fifo"
expect "roced --check-config over 1 MiB" "is 1048577 bytes; at most 1048576 are read" \
  "$BIN/roced" --check-config --config "$WORK/big.yaml"
expect "rocectl apply -f /dev/zero" "config file /dev/zero is a character device; $REG" \
  "$BIN/rocectl" --socket "$WORK/none.sock" apply -f /dev/zero
expect "rocectl apply -f FIFO" "config file $WORK/fifo is a FIFO; $REG" \
  "$BIN/rocectl" --socket "$WORK/none.sock" apply -f "$WORK/fifo"
expect "rocectl apply -f over 1 MiB" "is 1048577 bytes; at most 1048576 are read" \
  "$BIN/rocectl" --socket "$WORK/none.sock" apply -f "$WORK/big.yaml"

expect "roced --check-config directory" "config file $WORK/dir is a directory; $REG" \
  "$BIN/roced" --check-config --config "$WORK/dir"
expect "roced --check-config symlink to /dev/zero" "config file $WORK/zero-link is a character device; $REG" \
  "$BIN/roced" --check-config --config "$WORK/zero-link"

# --check-config --config /dev/zero within 1 s (the slowest of three, in ms).
# A sanitized binary (scripts/test.sh sets ASAN_OPTIONS or TSAN_OPTIONS for
# those runs) takes 1-2 s only to start on a loaded machine, so there the
# bound is 10 s: an unbounded read of /dev/zero still takes far longer.
bound=1000
if [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then bound=10000; fi
worst=0
for _ in 1 2 3; do
  t0=$(date +%s%N)
  "$BIN/roced" --check-config --config /dev/zero >/dev/null 2>&1 || true
  ms=$((($(date +%s%N) - t0) / 1000000))
  if [ "$ms" -gt "$worst" ]; then worst=$ms; fi
done
if [ "$worst" -lt "$bound" ]; then
  ok "roced --check-config --config /dev/zero exits within $bound ms (slowest of three: $worst ms)"
else
  bad "roced --check-config --config /dev/zero took $worst ms (bound $bound ms)"
fi

# roced's other files: each refused at start-up, before anything listens.
# (Wrapper scripts, not functions: `timeout` runs programs.)
C=$WORK/certs
bash "$SRC/tests/tls/make_certs.sh" "$C" >/dev/null 2>&1
cp "$SRC/deploy/examples/minimal.yaml" "$WORK/roced.yaml"
R=$WORK/roced.sh
printf '#!/bin/sh\nexec "%s" --sysfs-root "%s" --config "%s" --socket "" --grpc-listen "" --state-dir "%s" "$@"\n' \
  "$BIN/roced" "$SRC/tests/fixtures/sysfs" "$WORK/roced.yaml" "$WORK/state" >"$R"
# web-tls.sh FIELD FILE: roced with a web config whose tls_server_config.FIELD is FILE.
cat >"$WORK/web-tls.sh" <<'SCRIPT'
#!/bin/sh
work=$(dirname "$0")
cert=$work/certs/server.crt key=$work/certs/server.key ca=$work/certs/ca.crt
case $1 in cert_file) cert=$2 ;; key_file) key=$2 ;; client_ca_file) ca=$2 ;; esac
printf 'tls_server_config:\n  cert_file: %s\n  key_file: %s\n  client_ca_file: %s\n  client_auth_type: RequireAndVerifyClientCert\n' \
  "$cert" "$key" "$ca" >"$work/web-$1.yaml"
exec "$work/roced.sh" --metrics-listen 127.0.0.1:0 --web.config.file "$work/web-$1.yaml"
SCRIPT
chmod +x "$R" "$WORK/web-tls.sh"
truncate -s $((65536 + 1)) "$WORK/big-64k"
truncate -s $((1048576 + 1)) "$WORK/big-pem"
# for_each_bad WHAT PREFIX BIG BOUND CMD...: CMD (each @ in it, and in
# PREFIX, replaced by the file) refuses /dev/zero, the FIFO, the directory,
# the symlink to /dev/zero and BIG (BOUND+1 bytes), naming the file.
for_each_bad() {
  local what=$1 prefix=$2 big=$3 bound=$4 f kind
  shift 4
  for f in /dev/zero "$WORK/fifo" "$WORK/dir" "$WORK/zero-link" "$big"; do
    case $f in
      /dev/zero | "$WORK/zero-link") kind="is a character device; $REG" ;;
      "$WORK/fifo") kind="is a FIFO; $REG" ;;
      "$WORK/dir") kind="is a directory; $REG" ;;
      *) kind="is $((bound + 1)) bytes; at most $bound are read" ;;
    esac
    expect "$what: ${f#"$WORK/"}" "${prefix//@/$f} $f $kind" "${@//@/$f}"
  done
}
for_each_bad "roced --access-file" "access policy" "$WORK/big-64k" 65536 \
  "$R" --metrics-listen '' --access-file @
for_each_bad "roced --web.config.file" "web config" "$WORK/big-64k" 65536 \
  "$R" --metrics-listen 127.0.0.1:0 --web.config.file @
for_each_bad "roced --tls-client-ca" "--tls-client-ca @: PEM file" "$WORK/big-pem" 1048576 \
  "$R" --metrics-listen '' --tls-client-ca @ --tls-cert "$C/server.crt" --tls-key "$C/server.key"
for_each_bad "roced --tls-cert" "--tls-cert @: PEM file" "$WORK/big-pem" 1048576 \
  "$R" --metrics-listen '' --tls-client-ca "$C/ca.crt" --tls-cert @ --tls-key "$C/server.key"
for_each_bad "roced --tls-key" "--tls-key @: PEM file" "$WORK/big-pem" 1048576 \
  "$R" --metrics-listen '' --tls-client-ca "$C/ca.crt" --tls-cert "$C/server.crt" --tls-key @
for field in cert_file key_file client_ca_file; do
  for_each_bad "web config tls_server_config.$field" "tls_server_config.$field: PEM file" "$WORK/big-pem" 1048576 \
    "$WORK/web-tls.sh" "$field" @
done

# rocectl's: the TLS files (with and without --target) and the rollout state.
for_each_bad "rocectl --ca --target" "--ca @: PEM file" "$WORK/big-pem" 1048576 \
  "$BIN/rocectl" --target 127.0.0.1:1 --ca @ --cert "$C/admin.crt" --key "$C/admin.key" status
for_each_bad "rocectl --cert --target" "--cert @: PEM file" "$WORK/big-pem" 1048576 \
  "$BIN/rocectl" --target 127.0.0.1:1 --ca "$C/ca.crt" --cert @ --key "$C/admin.key" status
for_each_bad "rocectl --ca (peers' credentials)" "--ca @: PEM file" "$WORK/big-pem" 1048576 \
  "$BIN/rocectl" --socket "$WORK/none.sock" --ca @ status
truncate -s $((1073741824 + 1)) "$WORK/big-state"
for_each_bad "rocectl rollout status --state" "rollout state file" "$WORK/big-state" 1073741824 \
  "$BIN/rocectl" --socket "$WORK/none.sock" rollout status --state @
printf '{}' >"$WORK/rollout.json"
rm -f "$WORK/rollout.json.journal"
mkfifo "$WORK/rollout.json.journal"
expect "rocectl rollout status: a FIFO as the journal" "rollout journal $WORK/rollout.json.journal is a FIFO; $REG" \
  "$BIN/rocectl" --socket "$WORK/none.sock" rollout status --state "$WORK/rollout.json"

finish
