#!/usr/bin/env bash
# What TLS and basic auth (--web.config.file) add to a scrape of /metrics:
# two roced on the fixture tree, one plain HTTP and one HTTPS (ECDSA P-256
# certificate, TLS 1.3) with a bcrypt (cost 10) user, scraped alternately,
# 200 times each, in the same run. Every scrape is a new connection, as
# civetweb closes each one after its response (so each HTTPS scrape pays a
# full handshake). Prints the median and p90 wall time of each, the ratio
# HTTPS+auth / plain, and a wrong password's cost (bcrypt on every request:
# no cache for failures), with the date and the machine.
#
# Not a timed test: run it by hand on an otherwise quiet machine.
#   bash bench/metrics_tls_cost.sh [BUILD_BIN_DIR] [SCRAPES]
# Needs openssl, python3 and a built roced.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=$(cd "${1:-$SRC/build/bin}" && pwd)
SCRAPES=${2:-200}
[ -x "$BIN/roced" ] || { echo "bench: no roced in $BIN (build first)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/roced-tls-bench.XXXXXX)
PIDS=()
cleanup() {
  for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

cd "$WORK"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 1 -subj /CN=bench-ca \
  -keyout ca.key -out ca.crt 2>/dev/null
openssl req -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj /CN=127.0.0.1 \
  -keyout server.key -out server.csr 2>/dev/null
printf 'subjectAltName=IP:127.0.0.1\n' >server.ext
openssl x509 -req -in server.csr -CA ca.crt -CAkey ca.key -CAcreateserial -days 1 \
  -extfile server.ext -out server.crt 2>/dev/null
HASH=$(python3 -W ignore -c 'import crypt; print(crypt.crypt("s3cret", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10)))')
printf 'tls_server_config:\n  cert_file: server.crt\n  key_file: server.key\nbasic_auth_users:\n  prometheus: %s\n' \
  "$HASH" >web.yaml
cp "$SRC/deploy/examples/minimal.yaml" roced.yaml

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
start() {  # start NAME PORT [ARGS...]
  local name=$1 port=$2
  shift 2
  "$BIN/roced" --sysfs-root "$SRC/tests/fixtures/sysfs" --config roced.yaml --grpc-listen 127.0.0.1:0 \
    --metrics-listen "127.0.0.1:$port" --socket "$WORK/$name.sock" --state-dir "$WORK/$name" \
    --log-level warning "$@" 2>"$WORK/$name.log" &
  PIDS+=($!)
}
PLAIN_PORT=$(free_port)
TLS_PORT=$(free_port)
start plain "$PLAIN_PORT"
start tls "$TLS_PORT" --web.config.file "$WORK/web.yaml"

echo "date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$("$BIN/roced" --version | head -1); $(openssl version); fixture tree (tests/fixtures/sysfs)"

python3 - "$PLAIN_PORT" "$TLS_PORT" "$SCRAPES" "$WORK/ca.crt" <<'PY'
import base64, http.client, ssl, statistics, sys, time

plain_port, tls_port, n = (int(a) for a in sys.argv[1:4])
ctx = ssl.create_default_context(cafile=sys.argv[4])

def auth(password):
    return {"Authorization": "Basic " + base64.b64encode(f"prometheus:{password}".encode()).decode()}

def scrape(kind, password="s3cret"):
    t0 = time.perf_counter()
    if kind == "plain":
        c = http.client.HTTPConnection("127.0.0.1", plain_port, timeout=30)
        c.request("GET", "/metrics")
    else:
        c = http.client.HTTPSConnection("127.0.0.1", tls_port, timeout=30, context=ctx)
        c.request("GET", "/metrics", headers=auth(password))
    r = c.getresponse()
    body = r.read()
    c.close()
    return time.perf_counter() - t0, r.status, len(body)

deadline = time.time() + 10
while True:
    try:
        if scrape("plain")[1] == 200 and scrape("tls")[1] == 200:
            break
    except OSError:
        pass
    if time.time() > deadline:
        raise SystemExit("bench: the agents did not answer within 10 s")
    time.sleep(0.1)
for _ in range(10):  # warm-up (and the one bcrypt run the cache then spares)
    scrape("plain"), scrape("tls")

times = {"plain": [], "tls": []}
sizes = {}
for i in range(n):
    order = ["plain", "tls"] if i % 2 == 0 else ["tls", "plain"]
    for kind in order:
        dt, status, size = scrape(kind)
        if status != 200:
            raise SystemExit(f"bench: {kind} scrape answered {status}")
        times[kind].append(dt)
        sizes[kind] = size
wrong = []
for _ in range(min(n, 20)):
    dt, status, _ = scrape("tls", "wrong")
    if status != 401:
        raise SystemExit(f"bench: a wrong password answered {status}")
    wrong.append(dt)

med = {k: statistics.median(v) for k, v in times.items()}
p90 = {k: sorted(v)[int(len(v) * 0.9)] for k, v in times.items()}
print(f"{n} scrapes each, alternating, a new connection each")
print(f"{'':28} {'median ms':>10} {'p90 ms':>8} {'bytes':>7}")
print(f"{'plain HTTP':28} {med['plain']*1e3:10.2f} {p90['plain']*1e3:8.2f} {sizes['plain']:7d}")
print(f"{'HTTPS + basic auth (cached)':28} {med['tls']*1e3:10.2f} {p90['tls']*1e3:8.2f} {sizes['tls']:7d}")
print(f"{'HTTPS, wrong password (401)':28} {statistics.median(wrong)*1e3:10.2f} "
      f"{sorted(wrong)[int(len(wrong) * 0.9)]*1e3:8.2f}       -   ({len(wrong)} requests; bcrypt every time)")
print(f"ratio HTTPS+auth / plain, scrape time (median): {med['tls'] / med['plain']:.2f} "
      f"(+{(med['tls'] - med['plain'])*1e3:.2f} ms a scrape)")
PY
