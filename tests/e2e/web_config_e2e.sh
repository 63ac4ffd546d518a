#!/usr/bin/env bash
# /metrics with --web.config.file, against the real roced on the fixture
# tree: certificates (a CA, the server's, a client's, another CA's client)
# and a bcrypt hash are made here; curl checks HTTPS with the CA, plain HTTP
# on the TLS port refused, basic auth (none/wrong -> 401, right -> metrics),
# RequireAndVerifyClientCert (no cert and another CA's refused, the right
# one served), min_version TLS13 refusing a TLS 1.2-only client, a renewed
# server certificate served without a restart, and a bad web config
# stopping start-up with the field named. With --installed, the build is
# installed (cmake --install) into a scratch prefix and the installed roced
# is the one run: its RUNPATH must find the OpenSSL 3 shim in
# <prefix>/lib/roced (agent/serve/openssl3_shim/libssl_shim.c says why it is needed).
# Usage: web_config_e2e.sh BIN_DIR SOURCE_DIR [--installed]
set -euo pipefail
BIN=$1
SRC=$2
WORK=$(mktemp -d /tmp/roced-webcfg-e2e.XXXXXX)
PID=
cleanup() {
  [ -n "$PID" ] && kill "$PID" 2>/dev/null && wait "$PID" 2>/dev/null || true
  rm -rf "$WORK"
}
trap cleanup EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"
for tool in openssl curl python3; do
  command -v "$tool" >/dev/null || { echo "SKIP: $tool not installed"; exit 77; }
done

if [ "${3:-}" = --installed ]; then
  cmake --install "$BIN/.." --prefix "$WORK/prefix" >"$WORK/install.log"
  ROCED=$WORK/prefix/bin/roced
  check "the installed roced's RUNPATH is \$ORIGIN/../lib/roced" \
    grep -qF 'runpath: [$ORIGIN/../lib/roced]' <<<"$(readelf -d "$ROCED")"
  check "the installed roced loads the shim libssl.so and libcrypto.so from the prefix" \
    bash -c "ldd '$ROCED' | grep -qF 'libssl.so => $WORK/prefix/bin/../lib/roced/libssl.so' &&
             ldd '$ROCED' | grep -qF 'libcrypto.so => $WORK/prefix/bin/../lib/roced/libcrypto.so'"
  export ROCED
fi

# --- certificates ---------------------------------------------------------
T=$WORK/tls
mkdir -p "$T"
ossl() { openssl "$@" 2>>"$WORK/openssl.log"; }
make_ca() {  # make_ca NAME
  ossl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 2 -subj "/CN=$1" \
    -keyout "$T/$1.key" -out "$T/$1.crt"
}
make_cert() {  # make_cert NAME CA EXT
  ossl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=$1" \
    -keyout "$T/$1.key" -out "$T/$1.csr"
  printf '%s\n' "$3" >"$T/$1.ext"
  ossl x509 -req -in "$T/$1.csr" -CA "$T/$2.crt" -CAkey "$T/$2.key" -CAcreateserial -days 2 \
    -extfile "$T/$1.ext" -out "$T/$1.crt"
}
make_ca ca
make_ca other-ca
make_cert server ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
make_cert client ca "extendedKeyUsage=clientAuth"
make_cert intruder other-ca "extendedKeyUsage=clientAuth"
HASH=$(python3 -W ignore -c 'import crypt; print(crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10)))')
case $HASH in '$2'?'$10$'*) ;; *) echo "FAIL - python3 made no bcrypt hash: $HASH"; exit 1 ;; esac

# start_with WEB_CONFIG_TEXT: roced with it (relative paths: tls/...).
start_with() {
  [ -n "$PID" ] && { kill "$PID"; wait "$PID" 2>/dev/null || true; PID=; }
  printf '%s\n' "$1" >"$WORK/web.yaml"
  PORT=$(free_port)
  ROCED_ARGS=(--web.config.file "$WORK/web.yaml")
  start_fixture_agent "$PORT"
  # gRPC answers before the metrics endpoint listens.
  for _ in $(seq 1 50); do
    (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null && break
    sleep 0.1
  done
  URL=https://127.0.0.1:$PORT/metrics
}
# code ARGS...: the HTTP status curl got, or 000 when the connection failed.
code() { curl -s -o /dev/null -w '%{http_code}' --max-time 5 "$@" || true; }
serves_metrics() {
  local out
  out=$(curl -sSf --max-time 5 "$@" 2>&1) && grep -q '^roced_build_info{' <<<"$out" || { echo "$out" | tail -2; false; }
}

# --- TLS, basic auth --------------------------------------------------------
start_with "tls_server_config:
  cert_file: tls/server.crt
  key_file: tls/server.key
basic_auth_users:
  alice: $HASH"
check "HTTPS with the CA and the password serves metrics" \
  serves_metrics --cacert "$T/ca.crt" -u alice:s3cret "$URL"
check "plain HTTP on the TLS port gets no answer" \
  test "$(code "http://127.0.0.1:$PORT/metrics")" = 000
check "the server certificate is not trusted without the CA" \
  test "$(code -u alice:s3cret "$URL")" = 000
check "no password -> 401" test "$(code --cacert "$T/ca.crt" "$URL")" = 401
check "wrong password -> 401" test "$(code --cacert "$T/ca.crt" -u alice:wrong "$URL")" = 401
check "unknown user -> 401" test "$(code --cacert "$T/ca.crt" -u bob:s3cret "$URL")" = 401
check "right password again (cached) -> 200" \
  test "$(code --cacert "$T/ca.crt" -u alice:s3cret "$URL")" = 200
check "the health component says https and basic auth" \
  grep -q 'https, basic auth' <<<"$("$BIN/rocectl" --socket "$WORK/roced.sock" -o json status)"

# --- a renewed certificate, no restart ---------------------------------------
old_serial=$(openssl x509 -in "$T/server.crt" -noout -serial)
sleep 1  # a new mtime second for filesystems with coarse timestamps
make_cert server ca "subjectAltName=IP:127.0.0.1,DNS:localhost"
new_serial=$(openssl x509 -in "$T/server.crt" -noout -serial)
served_serial() {
  openssl s_client -connect "127.0.0.1:$PORT" -CAfile "$T/ca.crt" </dev/null 2>/dev/null |
    openssl x509 -noout -serial 2>/dev/null
}
renewed=no
for _ in $(seq 1 30); do
  [ "$(served_serial)" = "$new_serial" ] && { renewed=yes; break; }
  sleep 0.5
done
check "a renewed server certificate is served without a restart ($old_serial -> $new_serial)" \
  test "$renewed" = yes
check "and scrapes still work over it" serves_metrics --cacert "$T/ca.crt" -u alice:s3cret "$URL"

# --- client certificates ----------------------------------------------------
start_with "tls_server_config:
  cert_file: tls/server.crt
  key_file: tls/server.key
  client_auth_type: RequireAndVerifyClientCert
  client_ca_file: tls/ca.crt"
check "RequireAndVerifyClientCert: no client certificate is refused" \
  test "$(code --cacert "$T/ca.crt" "$URL")" = 000
check "RequireAndVerifyClientCert: another CA's client certificate is refused" \
  test "$(code --cacert "$T/ca.crt" --cert "$T/intruder.crt" --key "$T/intruder.key" "$URL")" = 000
check "RequireAndVerifyClientCert: the CA's client certificate is served" \
  serves_metrics --cacert "$T/ca.crt" --cert "$T/client.crt" --key "$T/client.key" "$URL"

start_with "tls_server_config:
  cert_file: tls/server.crt
  key_file: tls/server.key
  client_auth_type: VerifyClientCertIfGiven
  client_ca_file: tls/ca.crt"
check "VerifyClientCertIfGiven: no client certificate is served" \
  serves_metrics --cacert "$T/ca.crt" "$URL"
check "VerifyClientCertIfGiven: another CA's client certificate is refused" \
  test "$(code --cacert "$T/ca.crt" --cert "$T/intruder.crt" --key "$T/intruder.key" "$URL")" = 000

start_with "tls_server_config:
  cert_file: tls/server.crt
  key_file: tls/server.key
  client_auth_type: RequireAnyClientCert"
check "RequireAnyClientCert: no client certificate is refused" \
  test "$(code --cacert "$T/ca.crt" "$URL")" = 000
check "RequireAnyClientCert: any client certificate is served" \
  serves_metrics --cacert "$T/ca.crt" --cert "$T/intruder.crt" --key "$T/intruder.key" "$URL"

# --- protocol versions --------------------------------------------------------
start_with "tls_server_config:
  cert_file: tls/server.crt
  key_file: tls/server.key
  min_version: TLS13"
check "min_version TLS13 refuses a TLS 1.2-only client" \
  test "$(code --cacert "$T/ca.crt" --tls-max 1.2 "$URL")" = 000
check "min_version TLS13 serves a TLS 1.3 client" serves_metrics --cacert "$T/ca.crt" --tlsv1.3 "$URL"

start_with "tls_server_config:
  cert_file: tls/server.crt
  key_file: tls/server.key"
check "the default (min_version TLS12) serves a TLS 1.2-only client" \
  serves_metrics --cacert "$T/ca.crt" --tls-max 1.2 "$URL"

# --- refused at start-up -------------------------------------------------------
kill "$PID"; wait "$PID" 2>/dev/null || true; PID=
bad_start() {  # bad_start WEB_CONFIG_TEXT EXPECTED_TEXT
  printf '%s\n' "$1" >"$WORK/bad.yaml"
  local rc=0
  "${ROCED:-$BIN/roced}" --sysfs-root "$SRC/tests/fixtures/sysfs" --config "$WORK/roced.yaml" \
    --grpc-listen 127.0.0.1:0 --insecure --metrics-listen 127.0.0.1:0 --socket "$WORK/bad.sock" \
    --state-dir "$WORK/bad-state" --web.config.file "$WORK/bad.yaml" 2>"$WORK/bad.log" || rc=$?
  [ "$rc" = 1 ] && grep -qF "$2" "$WORK/bad.log"
}
check "an unknown key stops start-up naming it" \
  bad_start "tls_server_config:
  cert_file: tls/server.crt
  key_file: tls/server.key
  cipher_suite: x" "tls_server_config.cipher_suite: unknown field"
check "a key that is not the certificate's stops start-up naming both fields" \
  bad_start "tls_server_config:
  cert_file: tls/server.crt
  key_file: tls/client.key" "tls_server_config.key_file $T/client.key: is not the key of the certificate in cert_file"
check "a missing certificate file stops start-up naming it" \
  bad_start "tls_server_config:
  cert_file: tls/nope.crt
  key_file: tls/server.key" "tls_server_config.cert_file: PEM file $T/nope.crt: No such file or directory"

finish
