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
cd "$out"
key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }
ca() {  # ca NAME CN
  key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.crt" -subj "/CN=$2" -days 30 \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}
leaf() {  # leaf NAME CN SANS CA DAYS USAGE
  key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\nsubjectAltName=%s\n' \
    "$6" "$3" > "$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$4.crt" -CAkey "$4.key" -CAcreateserial -out "$1.crt" \
    -days "$5" -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
ca ca roced-test-ca
ca other-ca other-test-ca
sans="DNS:localhost,IP:127.0.0.1,IP:::1"
for s in "$@"; do sans="$sans,$s"; done
leaf server node.test "$sans" ca 30 serverAuth,clientAuth
for who in admin operator viewer peer; do
  leaf "$who" "$who.test" "DNS:$who.test" ca 30 clientAuth
done
leaf other other.test DNS:other.test other-ca 30 clientAuth
leaf uri uri-cn.test URI:spiffe://roced.test/controller ca 30 clientAuth
leaf expired expired.test DNS:expired.test ca 0 clientAuth
chmod 600 ./*.key
sleep 1  # expired.crt's notAfter is now: a second later it has expired
