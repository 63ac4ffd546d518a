# Shared settings for tests/lab/lab and tests/lab/setup.sh. Sourced, not run.
# shellcheck shell=bash

LAB_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
REPO_DIR=$(cd "$LAB_DIR/../.." && pwd)

# Downloaded kernels, built modules and initramfs images (outside the tree).
LAB_CACHE=${LAB_CACHE:-/var/cache/roced-lab}
# One lab instance = one network namespace + one run dir. LAB_NAME lets a
# second lab (e.g. the ctest suite) run beside an interactive one.
LAB_NAME=${LAB_NAME:-roced-lab}
LAB_RUN=${LAB_RUN:-/run/$LAB_NAME}
LAB_NETNS=$LAB_NAME

LAB_SUBNET_PREFIX=192.168.77      # exists only inside the lab namespace
LAB_HOST_IP=$LAB_SUBNET_PREFIX.1  # the namespace's own address on the bridge
LAB_BRIDGE=labbr0
LAB_MAX_NODES=8
LAB_RUNNER_PORT_BASE=2200         # exec runner: 127.0.0.1:(base+i) in the netns
LAB_GRPC_PORT=7471
LAB_METRICS_PORT=9471

# Debian's interpreter, not whatever python3 a PATH (pyenv shims...) finds first.
PY=/usr/bin/python3

# The lab's mutual TLS, made at `lab up`: a CA, a certificate per node (CN
# and DNS nodeN, IP SAN its lab address; the peer role in every node's
# access file, so agents set up probes with each other) and lab-admin, the
# admin certificate rocectl uses from the lab namespace (ROCECTL_* below).
LAB_TLS=$LAB_RUN/tls
# shellcheck source=../../tls/certs_lib.sh
source "$LAB_DIR/../tls/certs_lib.sh"
lab_make_tls() { # nodes
  local i dir
  mkdir -p "$LAB_TLS"
  (
    cd "$LAB_TLS"
    tls_ca ca "$LAB_NAME CA"
    tls_leaf lab-admin lab-admin DNS:lab-admin ca 30 clientAuth
    for ((i = 1; i <= $1; i++)); do
      tls_leaf "node$i" "node$i" "DNS:node$i,IP:$(lab_node_ip "$i")" ca 30 serverAuth,clientAuth
    done
  )
  printf '%s\n' 'apiVersion: roced/v1' 'kind: AccessPolicy' 'identities:' \
    '  - {match: lab-admin, roles: [admin]}' '  - {match: "node*", roles: [peer]}' >"$LAB_TLS/access.yaml"
  for ((i = 1; i <= $1; i++)); do
    dir=$LAB_RUN/nodes/node$i/tls
    mkdir -p "$dir"
    cp "$LAB_TLS/node$i.crt" "$dir/node.crt"
    cp "$LAB_TLS/node$i.key" "$dir/node.key"
    cp "$LAB_TLS/ca.crt" "$LAB_TLS/access.yaml" "$dir/"
  done
  chmod 600 "$LAB_TLS"/*.key "$LAB_RUN"/nodes/node*/tls/node.key
}
# rocectl's defaults for talking to the lab's agents (lab-admin).
lab_rocectl_env() {
  [[ -f $LAB_TLS/ca.crt ]] || return 0
  export ROCECTL_CA=$LAB_TLS/ca.crt ROCECTL_CERT=$LAB_TLS/lab-admin.crt ROCECTL_KEY=$LAB_TLS/lab-admin.key
}

lab_log() { printf 'lab: %s\n' "$*" >&2; }
lab_die() { printf 'lab: error: %s\n' "$*" >&2; exit 1; }

lab_node_index() { # node3 -> 3
  local n=$1
  [[ $n =~ ^node([1-9])$ ]] || return 1
  (( BASH_REMATCH[1] <= LAB_MAX_NODES )) || return 1
  echo "${BASH_REMATCH[1]}"
}
# The routed lab (`up --tors T`, T > 1): node i stands under ToR
# ((i - 1) mod T) + 1, in subnet 10.77.TOR.0/24 (the ToR's gateway .254, the
# lab namespace's own address there .1); LAB_TORS comes from the state file.
LAB_ROUTED_PREFIX=10.77
lab_node_tor() { echo $((($1 - 1) % ${LAB_TORS:-1} + 1)); }
lab_node_ip() {
  if ((${LAB_TORS:-1} > 1)); then echo "$LAB_ROUTED_PREFIX.$(lab_node_tor "$1").$((10 + $1))"
  else echo "$LAB_SUBNET_PREFIX.$((10 + $1))"; fi
}
# The lab namespace's address on node i's network.
lab_host_ip() {
  if ((${LAB_TORS:-1} > 1)); then echo "$LAB_ROUTED_PREFIX.$(lab_node_tor "$1").1"; else echo "$LAB_HOST_IP"; fi
}
# Where node i's tap hangs: the ToR's namespace and bridge, or the lab's.
lab_node_netns() { if ((${LAB_TORS:-1} > 1)); then echo "$LAB_NETNS-tor$(lab_node_tor "$1")"; else echo "$LAB_NETNS"; fi; }
lab_node_bridge() { if ((${LAB_TORS:-1} > 1)); then echo torbr; else echo "$LAB_BRIDGE"; fi; }
lab_node_tap() { echo "tap-node$1"; }
lab_node_mac() { printf '52:54:00:77:00:%02x' "$1"; }

# Kernel version the lab uses, e.g. 6.1.0-56-amd64: from the linux-image-amd64
# metapackage (so image and headers always match); LAB_KVER overrides; without
# apt lists, the newest kernel already in the cache.
lab_resolve_kver() {
  if [[ -n ${LAB_KVER:-} ]]; then echo "$LAB_KVER"; return; fi
  local dep="" stamp memo=$LAB_CACHE/kver.resolved
  # apt-cache takes seconds here (no binary package cache), so remember the
  # answer for as long as the apt lists are unchanged.
  stamp=$(stat -c %Y /var/lib/apt/lists 2>/dev/null; ls -t /var/lib/apt/lists 2>/dev/null | head -1)
  stamp=$(echo "$stamp" | paste -sd' ')
  if [[ -f $memo && $(head -1 "$memo") == "$stamp" ]]; then
    dep=$(sed -n 2p "$memo")
    [[ -f $LAB_CACHE/$dep/.ready ]] || dep=""
  fi
  if [[ -z $dep ]]; then
    dep=$(apt-cache depends linux-image-amd64 2>/dev/null |
          sed -n 's/^ *Depends: linux-image-\([0-9][^ ]*-amd64\)$/\1/p' | head -1)
    if [[ -n $dep && -d $LAB_CACHE ]]; then printf '%s\n%s\n' "$stamp" "$dep" >"$memo" 2>/dev/null || true; fi
  fi
  if [[ -z $dep && -d $LAB_CACHE ]]; then
    dep=$(find "$LAB_CACHE" -mindepth 2 -maxdepth 2 -name .ready -printf '%h\n' 2>/dev/null |
          xargs -r -n1 basename | sort -V | tail -1)
  fi
  [[ -n $dep ]] || return 1
  echo "$dep"
}

# Paths derived from a kernel version.
lab_kpaths() {
  local kver=$1
  KVER=$kver
  KCACHE=$LAB_CACHE/$kver
  KROOT=$KCACHE/root
  KIMAGE=$KROOT/boot/vmlinuz-$kver
  KVMLINUX=$KCACHE/vmlinux   # uncompressed, PVH-bootable (setup.sh)
  KMODDIR=$KROOT/lib/modules/$kver
  KHEADERS=$KROOT/usr/src/linux-headers-$kver
  KMODULE=$KCACHE/module/roce_dcbtest.ko
  KINITRD=$KCACHE/initramfs.cpio.gz
}
