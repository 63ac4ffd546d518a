# Helpers for the lab's ctest scripts. Sourced, not run.
# shellcheck shell=bash
set -euo pipefail

TESTS_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
LAB=$(cd "$TESTS_DIR/.." && pwd)/lab
export LAB_NAME=${LAB_NAME:-roced-lab-ctest}
SKIP=77
PY=/usr/bin/python3
TEST_NAME=$(basename "${BASH_SOURCE[1]:-$0}" .sh)

log() { printf '[%s] %s\n' "$TEST_NAME" "$*"; }
fail() { printf '[%s] FAIL: %s\n' "$TEST_NAME" "$*" >&2; exit 1; }
# In CI (CI=true, as CI services set it) a lab test may not skip: a runner
# without root, /dev/net/tun, namespaces or the agent would otherwise turn the
# whole lab label green without running anything. There, skip() fails with
# the same one-line reason. skip_by_choice() is for a skip the person running
# the tests asked for (e.g. LAB_TEST_NODES=2), which CI does not set.
in_ci() { [[ ${CI:-} =~ ^([Tt][Rr][Uu][Ee]|1|[Yy][Ee][Ss])$ ]]; }
skip() {
  if in_ci; then
    printf '[%s] FAIL: CI=%s and the test cannot run: %s\n' "$TEST_NAME" "$CI" "$*" >&2
    exit 1
  fi
  printf '[%s] SKIP: %s\n' "$TEST_NAME" "$*"
  exit "$SKIP"
}
skip_by_choice() { printf '[%s] SKIP: %s\n' "$TEST_NAME" "$*"; exit "$SKIP"; }
pass() { printf '[%s] PASS%s\n' "$TEST_NAME" "${1:+: $1}"; exit 0; }

# Why the lab cannot run on this machine (empty when it can).
lab_preflight_reason() {
  if [[ $(id -u) != 0 ]]; then echo "needs root (network namespaces, tap devices)"; return; fi
  # LAB_TUN_DEV: only for testing this check (point it at a missing path).
  local tun=${LAB_TUN_DEV:-/dev/net/tun}
  if [[ ! -c $tun ]]; then echo "$tun is missing: no tap devices on this machine"; return; fi
  if ! command -v ip >/dev/null; then echo "iproute2 (ip) is not installed"; return; fi
  local probe=roced-lab-probe-$$
  if ! ip netns add "$probe" 2>/dev/null; then echo "cannot create network namespaces (ip netns add failed)"; return; fi
  ip netns del "$probe" 2>/dev/null || true
}

# Every test but lab_up: the shared lab must be up, or we say why not.
require_lab() {
  local why
  why=$(lab_preflight_reason)
  [[ -z $why ]] || skip "$why"
  [[ -f /run/$LAB_NAME/state ]] ||
    fail "the lab ($LAB_NAME) is not up: the lab_up fixture did not bring it up"
  # shellcheck source=/dev/null
  source "/run/$LAB_NAME/state"
  # The test NIC's parameters at boot (stage2.sh), for a test that reloads it.
  DCBT_PARAMS="ifname=eth0 ofed_ecn=1 driver=${LAB_DRIVER:-mlx5}"
}

# lx NODE CMD...: run in a node (shorthand for lab exec)
lx() { local n=$1; shift; "$LAB" exec -t "${LX_TIMEOUT:-120}" "$n" -- "$@"; }
# lsh NODE 'shell script': run a shell snippet in a node
lsh() { local n=$1; shift; "$LAB" exec -t "${LX_TIMEOUT:-120}" "$n" -- sh -ec "$1"; }

# json_get JSON PYTHON-EXPR: evaluate EXPR with the parsed JSON bound to j.
json_get() { "$PY" -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }

# elapsed START_EPOCH: seconds since START (date +%s.%N), two decimals.
elapsed() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN{printf "%.2f", b-a}'; }

expect_eq() { # expect_eq WHAT WANT GOT
  [[ $2 == "$3" ]] || fail "$1: want '$2', got '$3'"
}

# Index of the RoCE v2 GID for the node's IPv4 address on rxe0 (never a fixed index).
roce_v2_ipv4_gid_index() {
  lsh "$1" '
    d=/sys/class/infiniband/rxe0/ports/1
    for g in $d/gids/*; do
      i=${g##*/}
      case $(cat $g) in 0000:0000:0000:0000:0000:ffff:*) ;; *) continue ;; esac
      [ "$(cat $d/gid_attrs/types/$i 2>/dev/null)" = "RoCE v2" ] && { echo $i; exit 0; }
    done
    exit 1'
}

# rsock NODE ARGS...: rocectl inside NODE over the agent's unix socket (root
# there, so admin), for when the lab network cannot reach the agent (eth0
# down, renamed or unbound) or the host's mTLS certificates are not valid on
# the guest's clock. The binary is the host's, on the guest's 9p root.
ROCED_SOCKET=/run/roced/roced.sock
rsock() { local n=$1; shift; lx "$n" "$ROCECTL_BIN" --socket "$ROCED_SOCKET" --timeout "${RSOCK_TIMEOUT:-30s}" "$@"; }

# The node's agent log (on the host, in the node's share): log_mark NODE
# prints its size now, log_since NODE MARK what the agent logged after it,
# expect_log NODE MARK REGEX WHAT fails unless a line since MARK matches
# (grep -E) and prints the first one.
agent_log() { echo "$("$LAB" logdir "$1")/roced.log"; }
log_mark() { stat -c %s "$(agent_log "$1")"; }
log_since() { tail -c +"$(($2 + 1))" "$(agent_log "$1")"; }
expect_log() {
  local line
  line=$(log_since "$1" "$2" | grep -E -m 1 -- "$3") ||
    fail "$4: no line matching /$3/ in $1's agent log since the fault; it logged:
$(log_since "$1" "$2" | tail -n 20)"
  printf '%s\n' "$line"
}

# wait_until SECS CMD...: a condition with a deadline (tests/wait_until.sh).
# shellcheck source=tests/wait_until.sh
source "$TESTS_DIR/../../wait_until.sh"

# wait_guest_file NODE PATH SECS WHAT: waits until PATH exists in NODE (a
# watcher there says it is armed); fails naming WHAT after SECS. A test
# that went on unarmed would race its own fault.
wait_guest_file() {
  wait_until "$3" lx "$1" test -e "$2" || fail "$4: $2 did not appear in $1 within $3 s"
}

# agent_pid NODE: roced's pid in NODE (fails when it is not running).
agent_pid() { lx "$1" pgrep -x roced; }

# data_nic_restore NODE: eth0 put back as the guest's boot (guest/stage2.sh)
# leaves it, whatever a test did to it: the data NIC's virtio device bound to
# virtio_net, its netdev (found by DATA_MAC from /lab/node.env) named eth0,
# with its lab address, offloads off, the DCB test module attached to it,
# rxe0 on it, and up (last: the agent learns of an RDMA device on the next
# link event or its periodic discovery, so rxe0 is there before the link-up
# event). Idempotent; prints each thing it had to redo.
data_nic_restore() {
  lsh "$1" '
    . /lab/node.env
    nic() { for d in /sys/class/net/*; do read -r a < $d/address; [ "$a" = "$DATA_MAC" ] && { echo ${d##*/}; return; }; done; }
    nd=$(nic)
    if [ -z "$nd" ]; then
      for v in /sys/bus/virtio/devices/*; do
        read -r id < $v/device
        [ "$id" = 0x0001 ] && [ ! -e $v/driver ] && { echo "bind ${v##*/}"; echo ${v##*/} > /sys/bus/virtio/drivers/virtio_net/bind; }
      done
      for i in $(seq 50); do nd=$(nic); [ -n "$nd" ] && break; sleep 0.1; done
    fi
    [ -n "$nd" ] || { echo "no netdev with $DATA_MAC" >&2; exit 1; }
    if [ "$nd" != eth0 ]; then echo "rename $nd"; ip link set "$nd" down; ip link set "$nd" name eth0; fi
    ip -o -4 addr show dev eth0 | grep -q " $NODE_IP/" || { echo "address"; ip addr add $NODE_IP/$PREFIXLEN dev eth0; }
    ethtool -K eth0 tx off sg off tso off gso off gro off >/dev/null 2>&1 || true
    if [ ! -d /sys/class/net/eth0/dcbtest ]; then
      echo "roce_dcbtest"
      ! lsmod | grep -q "^roce_dcbtest " || rmmod roce_dcbtest
      insmod $KCACHE/module/roce_dcbtest.ko ifname=eth0 ofed_ecn=1 driver=${DCBT_DRIVER:-mlx5}
    fi
    rdma link show rxe0/1 >/dev/null 2>&1 || { echo "rxe0"; rdma link add rxe0 type rxe netdev eth0; }
    ip -o link show eth0 | grep -q "[<,]UP[,>]" || { echo "up"; ip link set eth0 up; }'
}
