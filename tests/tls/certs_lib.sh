# Certificate helpers over openssl, for the tests and the lab. Sourced, not
# run. Every key is EC P-256; every function writes into the current
# directory.
# shellcheck shell=bash

# tls_key FILE
tls_key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

# tls_ca NAME CN: NAME.key and the self-signed NAME.crt (30 days).
tls_ca() {
  tls_key "$1.key"
  openssl req -x509 -new -key "$1.key" -out "$1.crt" -subj "/CN=$2" -days 30 \
    -addext basicConstraints=critical,CA:TRUE -addext keyUsage=critical,keyCertSign,cRLSign 2>/dev/null
}

# tls_leaf NAME CN SANS CA DAYS USAGE: NAME.key and NAME.crt signed by
# CA.crt/CA.key, with subjectAltName SANS ("DNS:a,IP:b") and
# extendedKeyUsage USAGE ("clientAuth", "serverAuth,clientAuth"). DAYS 0
# makes a certificate that expires the second after it is made.
tls_leaf() {
  tls_key "$1.key"
  openssl req -new -key "$1.key" -out "$1.csr" -subj "/CN=$2" 2>/dev/null
  printf 'basicConstraints=CA:FALSE\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=%s\nsubjectAltName=%s\n' \
    "$6" "$3" >"$1.ext"
  openssl x509 -req -in "$1.csr" -CA "$4.crt" -CAkey "$4.key" -CAcreateserial -out "$1.crt" \
    -days "$5" -extfile "$1.ext" 2>/dev/null
  rm -f "$1.csr" "$1.ext"
}
