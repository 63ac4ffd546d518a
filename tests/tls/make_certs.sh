#!/usr/bin/env bash
# Makes the certificates the mutual-TLS tests use, with openssl, at test
# time (nothing secret is checked in):
#   ca.crt/key           the CA the agent trusts (--tls-client-ca)
#   other-ca.crt/key     a CA the agent does not trust
#   server.crt/key       the agent: DNS localhost, IP 127.0.0.1, IP ::1, and
#                        any extra SANs given as arguments (DNS:x or IP:y)
#   NAME.crt/key         clients: admin.test, operator.test, viewer.test,
#                        peer.test (CN and DNS SAN), other.test (signed by
#                        other-ca), expired.test (expired one second after
#                        it is made), uri.test (only a URI SAN:
#                        spiffe://roced.test/controller)
# Usage: make_certs.sh OUTDIR [SAN...]
set -euo pipefail
out=$1; shift
mkdir -p "$out"
# shellcheck source=certs_lib.sh
source "$(dirname "$(readlink -f "$0")")/certs_lib.sh"
cd "$out"
tls_ca ca roced-test-ca
tls_ca other-ca other-test-ca
sans="DNS:localhost,IP:127.0.0.1,IP:::1"
for s in "$@"; do sans="$sans,$s"; done
tls_leaf server node.test "$sans" ca 30 serverAuth,clientAuth
for who in admin operator viewer peer; do
  tls_leaf "$who" "$who.test" "DNS:$who.test" ca 30 clientAuth
done
tls_leaf other other.test DNS:other.test other-ca 30 clientAuth
tls_leaf uri uri-cn.test URI:spiffe://roced.test/controller ca 30 clientAuth
tls_leaf expired expired.test DNS:expired.test ca 0 clientAuth
chmod 600 ./*.key
sleep 1  # expired.crt's notAfter is now: a second later it has expired
