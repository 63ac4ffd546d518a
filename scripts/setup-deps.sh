#!/usr/bin/env bash
# Installs everything roced's build, tests and demo need on Debian 12.
# Idempotent: packages already present are left alone; safe to run again.
set -euo pipefail

PKGS=(
  build-essential cmake pkg-config ninja-build git
  # the linker: mold links the ~140 test and tool binaries of a build 3x faster
  mold
  # compiler cache (scripts/test.sh): a re-run or a second clone rebuilds
  # only what changed
  ccache
  # gRPC, Protocol Buffers, Abseil
  libgrpc++-dev protobuf-compiler-grpc libprotobuf-dev protobuf-compiler libabsl-dev
  # config, metrics, tests
  libyaml-cpp-dev prometheus-cpp-dev libgtest-dev libgmock-dev
  # /metrics TLS and basic auth: OpenSSL (civetweb's TLS), libxcrypt (bcrypt)
  libssl-dev libcrypt-dev libcivetweb-dev zlib1g-dev
  # kernel-facing libraries
  libnl-3-dev libnl-route-3-dev libibverbs-dev librdmacm-dev
  rdma-core ibverbs-utils perftest iproute2 ethtool kmod
  # test tools: promtool (metrics format checks), curl (scrapes), systemd-analyze
  prometheus curl systemd python3 python3-yaml
  # the gRPC flow-control stall test's raw HTTP/2 client (tests/e2e/grpc_stall.py)
  python3-h2
  # ping: the neighbour tests make the kernel resolve an address (netns, lab)
  iputils-ping
  # the routed lab's fabric faults (nft in the ToR and spine namespaces: the
  # host kernel here has nf_tables but no tc qdiscs or classifiers)
  nftables
  # the LLDP decoder is checked against tcpdump's own decoding of the same frames
  tcpdump
  # the web config e2e test: certificates made at test time (bcrypt hashes
  # come from python3's crypt module)
  openssl
  # fuzzing: clang with libFuzzer and the sanitizer runtimes, llvm-symbolizer
  clang libclang-rt-14-dev llvm
)

if [ "$(id -u)" -ne 0 ]; then
  echo "setup-deps: must run as root (apt-get install)" >&2
  exit 1
fi

missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
  echo "setup-deps: all ${#PKGS[@]} packages present"
  exit 0
fi

echo "setup-deps: installing ${#missing[@]} packages: ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -q
apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
echo "setup-deps: done"
