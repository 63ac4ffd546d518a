#!/bin/bash
# Second stage of a lab guest's boot, run by the initramfs as PID 1 inside the
# chroot (host / read-only + tmpfs overlay). Reads /lab/node.env (written by
# `lab up` into the node's writable 9p share), sets up the node (eth0 with
# its lab address, offloads off, Soft-RoCE rxe0, the DCB test module), starts
# the command runner on the management NIC, then stays PID 1 and reaps
# orphans. Everything it prints goes to the node's console.log.
#
# THIS RUNS IN THE GUEST ONLY: it reconfigures eth0. It refuses to run as
# anything but PID 1.
set -u
if [[ $$ != 1 ]]; then
  echo "stage2.sh: runs only as PID 1 of a lab guest" >&2
  exit 1
fi
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb

say() { echo "lab-stage2: $*"; }

mount -t proc proc /proc
read -r T0 _ </proc/uptime
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /dev/hugepages
mount -t devpts -o gid=5,mode=620,ptmxmode=000 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
# /tmp stays the host's (read-only lower, writable overlay upper): a checkout
# under /tmp (CI clones there) must be visible to the guest.
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t hugetlbfs hugetlbfs /dev/hugepages 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null

# shellcheck source=/dev/null
. /lab/node.env || { say "no /lab/node.env"; exec sleep infinity; }
# node.env: NODE IDX NODE_IP PREFIXLEN NODES SUBNET_PREFIX KVER KCACHE LAB_DIR
#           RUNNER_PORT MGMT_IP MGMT_MAC DATA_MAC HOST_IP LAB_TRACE

if [[ ${LAB_TRACE:-0} == 1 ]]; then PS4='+ ${EPOCHREALTIME} '; set -x; fi

# Every fork+exec costs ~0.1 s under emulation: builtins where possible.
echo "$NODE" >/proc/sys/kernel/hostname
# Per-node identity in the overlay (the host's files are shared read-only).
read -r uuid </proc/sys/kernel/random/uuid
echo "${uuid//-/}" >/etc/machine-id
{
  echo "127.0.0.1 localhost"
  echo "127.0.1.1 $NODE"
  i=1
  for ip in $NODE_IPS; do echo "$ip node$i"; i=$((i + 1)); done
  echo "$HOST_IP labhost"
} >/etc/hosts
echo "$NODE" >/etc/hostname

# The guest kernel's modules come from the cache (same path as on the host).
mkdir -p "/lib/modules/$KVER"
mount --bind "$KCACHE/root/lib/modules/$KVER" "/lib/modules/$KVER"
# crc32_generic: rxe fails with "failed to init crc32 algorithm" without it.
modprobe -a virtio_net crc32_generic rdma_rxe rdma_ucm || say "modprobe failed"
# configfs is a module here (rdma_ucm pulls it in through rdma_cm): mount it
# only now, else the mount fails and rdma_cm's default_roce_mode/tos are absent.
mount -t configfs configfs /sys/kernel/config 2>/dev/null || say "configfs mount failed"

# Command runner (stdout/stderr/exit status over TCP on the management NIC).
# Started early so that Python's start-up overlaps the rest; it binds as soon
# as labmgmt has its address. `lab up` waits for /lab/ready (written last).
/usr/bin/python3 "$LAB_DIR/lib/runner.py" serve --bind "$MGMT_IP" --port "$RUNNER_PORT" \
  --ready-file /lab/runner.ready >>/lab/runner.log 2>&1 &

# Name the NICs by MAC: data NIC eth0, management NIC labmgmt.
ifname_of() {
  local d a
  for d in /sys/class/net/*; do
    read -r a <"$d/address" && [[ $a == "$1" ]] && { echo "${d##*/}"; return; }
  done
}
dt="" mg=""
for _ in {1..50}; do
  dt=$(ifname_of "$DATA_MAC")
  mg=$(ifname_of "$MGMT_MAC")
  [[ -n $dt && -n $mg ]] && break
  sleep 0.1
done
[[ -n $mg && -n $dt ]] || say "NICs missing: data=$dt mgmt=$mg"
echo 1 >"/proc/sys/net/ipv6/conf/$mg/disable_ipv6"

# Management NIC (labmgmt): QEMU user networking with restrict=on, so no
# route anywhere; it only carries `lab exec` sessions forwarded from the lab
# namespace. Data NIC (eth0): the lab network.
printf '%s\n' \
  "link set lo up" \
  "link set $mg name labmgmt" \
  "link set $dt name eth0" \
  "addr add $MGMT_IP/24 dev labmgmt" \
  "link set labmgmt up" \
  "addr add $NODE_IP/$PREFIXLEN dev eth0" \
  "link set eth0 up" | ip -batch - || say "ip setup failed"
# The routed lab: the other ToRs' subnets through this ToR's gateway.
if [[ -n ${GATEWAY:-} ]]; then ip route add "$ROUTED_NET" via "$GATEWAY" dev eth0 || say "route via $GATEWAY failed"; fi
ethtool -K eth0 tx off sg off tso off gso off gro off >/dev/null 2>&1 ||
  say "ethtool -K eth0 failed"

# DCB test NIC, and `dcb` with iproute2 6.1's stale-ACK fault worked
# around (guest/dcb says how; /usr/local/sbin comes first in PATH).
install -m 0755 "$(dirname "$0")/dcb" /usr/local/sbin/dcb || say "installing the dcb wrapper failed"
insmod "$KCACHE/module/roce_dcbtest.ko" ifname=eth0 ofed_ecn=1 driver="${DCBT_DRIVER:-mlx5}" ||
  say "insmod roce_dcbtest failed"

# Soft-RoCE.
rdma link add rxe0 type rxe netdev eth0 || say "rdma link add rxe0 failed"

ulimit -l unlimited
ulimit -n 65536
read -r T1 _ </proc/uptime
say "$NODE up: eth0 $NODE_IP, kernel $KVER, stage2 ${T0}s..${T1}s"

echo "$T1" >/lab/ready

# Stay PID 1: bash reaps every child that is re-parented to it.
set +x
trap '' TERM INT HUP
while :; do
  sleep 3600 &
  wait $! 2>/dev/null
done
