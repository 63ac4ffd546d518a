#!/usr/bin/env bash
# roced with a bad flag changes nothing: on a copy of the fixture tree with
# MLNX_OFED ECN files (writable), an enforce config that would turn ECN on
# priority 3, and a flag that cannot be served (gRPC on TCP without TLS or
# --insecure, --insecure on a non-loopback address, a missing TLS file, an
# unknown socket group, an IPv6 metrics address this civetweb cannot
# listen on), roced exits 1 naming the flag, leaves every file of the tree
# as it was and creates no state directory. Before the check ran first,
# the first case applied two ECN steps and wrote accepted.json, then exited
# (and under Restart=on-failure did so again on every start).
# Usage: bad_flags_e2e.sh BIN_DIR SOURCE_DIR
set -euo pipefail
BIN=$1
SRC=$2
WORK=$(mktemp -d /tmp/roced-badflags-e2e.XXXXXX)
trap 'rm -rf "$WORK"' EXIT
# shellcheck source=tests/e2e/lib.sh
source "$SRC/tests/e2e/lib.sh"
cp -a "$SRC/tests/fixtures/sysfs" "$WORK/sysfs"
for role in roce_np roce_rp; do
  mkdir -p "$WORK/sysfs/class/net/ens1f0/ecn/$role/enable"
  for p in 0 1 2 3 4 5 6 7; do echo 0 >"$WORK/sysfs/class/net/ens1f0/ecn/$role/enable/$p"; done
done
cat >"$WORK/config.yaml" <<'YAML'
apiVersion: roced/v1
kind: NodeConfig
mode: enforce
interfaces:
  - match: {netdev: ens1f0}
    qos:
      ecn: {np_priorities: [3], rp_priorities: [3]}
YAML
tree_sum() { (cd "$WORK/sysfs" && find . -type f -print0 | sort -z | xargs -0 sha256sum | sha256sum); }
before=$(tree_sum)

# refused WHAT PATTERN FLAGS...: roced with FLAGS exits 1 within 10 s saying
# PATTERN, the tree unchanged, no state directory.
refused() {
  local what=$1 pattern=$2 rc=0
  shift 2
  timeout 10 "$BIN/roced" --sysfs-root "$WORK/sysfs" --config "$WORK/config.yaml" --socket "$WORK/roced.sock" \
    --state-dir "$WORK/state" --metrics-listen '' --log-level info "$@" >"$WORK/out" 2>&1 || rc=$?
  if [ "$rc" = 1 ] && grep -q -- "$pattern" "$WORK/out" && [ "$(tree_sum)" = "$before" ] && [ ! -e "$WORK/state" ]; then
    ok "$what"
  else
    bad "$what (exit $rc; tree $([ "$(tree_sum)" = "$before" ] && echo unchanged || echo CHANGED);" \
      "state dir $([ -e "$WORK/state" ] && echo created || echo absent))"
    sed 's/^/    /' "$WORK/out"
  fi
}

refused "gRPC on TCP without TLS flags or --insecure" "needs --tls-cert, --tls-key and --tls-client-ca" \
  --grpc-listen 127.0.0.1:1
refused "--insecure on a non-loopback address" "needs --insecure-allow-remote" \
  --grpc-listen 0.0.0.0:1 --insecure
refused "a TLS file that does not exist" "--tls-client-ca $WORK/ca.pem: .*No such file or directory" \
  --grpc-listen 127.0.0.1:1 --tls-cert "$WORK/none.pem" --tls-key "$WORK/none.key" --tls-client-ca "$WORK/ca.pem"
refused "an unknown socket group" "no-such-group-roced" --grpc-listen '' --socket-group no-such-group-roced
refused "an IPv6 metrics address" "--metrics-listen \[::1\]:1: an IPv6 address needs civetweb built with IPv6" \
  --grpc-listen '' --metrics-listen '[::1]:1'

# The same config with good flags does change the tree (else the cases
# above prove nothing).
timeout 10 "$BIN/roced" --sysfs-root "$WORK/sysfs" --config "$WORK/config.yaml" --socket "$WORK/roced.sock" \
  --state-dir "$WORK/state" --metrics-listen '' --grpc-listen '' >"$WORK/out" 2>&1 &
pid=$!
for _ in $(seq 100); do
  [ "$(cat "$WORK/sysfs/class/net/ens1f0/ecn/roce_np/enable/3")" = 1 ] && break
  sleep 0.1
done
kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null || true
if [ "$(cat "$WORK/sysfs/class/net/ens1f0/ecn/roce_np/enable/3")" = 1 ]; then
  ok "with good flags the same config turns ECN on priority 3"
else
  bad "with good flags the same config did not turn ECN on"; sed 's/^/    /' "$WORK/out"
fi
finish
