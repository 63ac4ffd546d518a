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
}

# lx NODE CMD...: run in a node (shorthand for lab exec)
lx() { local n=$1; shift; "$LAB" exec -t "${LX_TIMEOUT:-120}" "$n" -- "$@"; }
# lsh NODE 'shell script': run a shell snippet in a node
lsh() { local n=$1; shift; "$LAB" exec -t "${LX_TIMEOUT:-120}" "$n" -- sh -ec "$1"; }

# json_get JSON PYTHON-EXPR: evaluate EXPR with the parsed JSON bound to j.
json_get() { "$PY" -c 'import json,sys; j=json.loads(sys.argv[1]); print(eval(sys.argv[2]))' "$1" "$2"; }

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
