#!/bin/bash
# Second stage of a lab guest's boot, run by the initramfs as PID 1 inside the
# chroot (host / read-only + tmpfs overlay). Reads /lab/node.env (written by
# `lab up` into the node's writable 9p share), sets up the node (eth0 with
# its lab address, offloads off, Soft-RoCE rxe0, the DCB test module), starts
# the command runner on the management NIC, then stays PID 1 and reaps
# orphans. Everything it prints goes to the node's console.log.
set -u
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
export HOME=/root LANG=C.UTF-8 TERM=dumb

say() { echo "lab-stage2: $*"; }

mount -t proc proc /proc
T0=$(cut -d' ' -f1 /proc/uptime)
mount -t sysfs sysfs /sys
mount -t devtmpfs devtmpfs /dev
mkdir -p /dev/pts /dev/shm /dev/hugepages
mount -t devpts -o gid=5,mode=620,ptmxmode=000 devpts /dev/pts
mount -t tmpfs -o mode=1777 tmpfs /dev/shm
mount -t tmpfs -o mode=1777 tmpfs /tmp
mount -t tmpfs -o mode=0755 tmpfs /run
mount -t debugfs debugfs /sys/kernel/debug 2>/dev/null
mount -t configfs configfs /sys/kernel/config 2>/dev/null
mount -t hugetlbfs hugetlbfs /dev/hugepages 2>/dev/null
mount -t cgroup2 cgroup2 /sys/fs/cgroup 2>/dev/null

# shellcheck source=/dev/null
. /lab/node.env || { say "no /lab/node.env"; exec sleep infinity; }
# node.env: NODE IDX NODE_IP PREFIXLEN NODES SUBNET_PREFIX KVER KCACHE LAB_DIR
#           RUNNER_PORT MGMT_IP MGMT_MAC DATA_MAC HOST_IP

if [[ ${LAB_TRACE:-0} == 1 ]]; then PS4='+ ${EPOCHREALTIME} '; set -x; fi
echo "$NODE" >/proc/sys/kernel/hostname
# Per-node identity in the overlay (the host's files are shared read-only).
cat /proc/sys/kernel/random/uuid | tr -d '-' >/etc/machine-id
{
  echo "127.0.0.1 localhost"
  echo "127.0.1.1 $NODE"
  for ((i = 1; i <= NODES; i++)); do echo "$SUBNET_PREFIX.$((10 + i)) node$i"; done
  echo "$HOST_IP labhost"
} >/etc/hosts
echo "$NODE" >/etc/hostname

# The guest kernel's modules come from the cache (same path as on the host).
mkdir -p "/lib/modules/$KVER"
mount --bind "$KCACHE/root/lib/modules/$KVER" "/lib/modules/$KVER"

modprobe virtio_net || say "modprobe virtio_net failed"
ip link set lo up

# Name the NICs by MAC: data NIC eth0, management NIC labmgmt.
ifname_of() { for d in /sys/class/net/*; do [[ $(cat "$d/address") == "$1" ]] && basename "$d"; done; }
for _ in 1 2 3 4 5 6 7 8 9 10; do
  [[ -n $(ifname_of "$DATA_MAC") && -n $(ifname_of "$MGMT_MAC") ]] && break
  sleep 0.2
done
mg=$(ifname_of "$MGMT_MAC"); dt=$(ifname_of "$DATA_MAC")
[[ -n $mg && -n $dt ]] || say "NICs missing: data=$dt mgmt=$mg"
[[ $mg != labmgmt ]] && ip link set "$mg" name labmgmt
[[ $dt != eth0 ]] && ip link set "$dt" name eth0

# Management NIC: QEMU user networking with restrict=on (no route anywhere);
# only carries `lab exec` sessions forwarded from the lab namespace.
sysctl -qw net.ipv6.conf.labmgmt.disable_ipv6=1 2>/dev/null
ip addr add "$MGMT_IP/24" dev labmgmt
ip link set labmgmt up

# Data NIC.
ip addr add "$NODE_IP/$PREFIXLEN" dev eth0
ip link set eth0 up
ethtool -K eth0 tx off sg off tso off gso off gro off >/dev/null 2>&1 ||
  say "ethtool -K eth0 failed"

# DCB test NIC.
if ! insmod "$KCACHE/module/roce_dcbtest.ko" ifname=eth0; then
  say "insmod roce_dcbtest failed"
fi

# Soft-RoCE.
modprobe crc32_generic
modprobe rdma_rxe || say "modprobe rdma_rxe failed"
modprobe rdma_ucm 2>/dev/null
rdma link add rxe0 type rxe netdev eth0 || say "rdma link add rxe0 failed"

ulimit -l unlimited
ulimit -n 65536
T1=$(cut -d' ' -f1 /proc/uptime)
say "$NODE up: eth0 $NODE_IP, kernel $(uname -r), stage2 ${T0}s..${T1}s"

# Command runner (stdout/stderr/exit status over TCP on the management NIC).
python3 "$LAB_DIR/lib/runner.py" serve --bind "$MGMT_IP" --port "$RUNNER_PORT" \
  --ready-file /lab/ready >>/lab/runner.log 2>&1 &

# Stay PID 1: bash reaps every child that is re-parented to it.
trap '' TERM INT HUP
while :; do
  sleep 3600 &
  wait $! 2>/dev/null
done
