#!/usr/bin/env bash
# Scrape cost of roced against node_exporter's infiniband collector on the
# same generated sysfs tree: 16 mlx5 devices x 2 ports, each port with the
# extended PMA counters/ set and the hw_counters/ set a ConnectX-6 Dx shows
# on a 6.x kernel. Both exporters are scraped alternately, 200 times each,
# in the same run, twice: as Prometheus scrapes (the Accept and
# Accept-Encoding: gzip headers Debian 12's Prometheus 2.42 sends; the
# headline figure) and plain (no headers, uncompressed). Prints the median
# scrape wall time and the memory of each and the ratios roced /
# node_exporter (goal: scrape time and memory <= 0.5), with the date and the
# machine.
#
# What differs from production, because the tree is not the live /sys (the
# agent keys these off --sysfs-root=/sys; the fixture's netdevs are not the
# running kernel's): no ethtool statistics (per-priority pause counters), no
# DCB netlink collector, no PFC watchdog pause polling, no verbs contexts.
# The RDMA counter files, discovery and everything else run as in production.
#
# Not a timed test: run it by hand on an otherwise quiet machine.
#   bash bench/scrape_vs_node_exporter.sh [BUILD_BIN_DIR] [SCRAPES]
# Needs prometheus-node-exporter (Debian package; installed with apt-get
# when missing and running as root), python3, and a built roced.
set -euo pipefail
SRC=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-$SRC/build/bin}
SCRAPES=${2:-200}
NODE_EXPORTER=prometheus-node-exporter

if ! command -v "$NODE_EXPORTER" >/dev/null; then
  if [ "$(id -u)" -eq 0 ]; then
    echo "installing prometheus-node-exporter (its service is not started by this script)"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends \
      prometheus-node-exporter </dev/null >/dev/null
  else
    echo "bench: prometheus-node-exporter is not installed (apt-get install prometheus-node-exporter)" >&2
    exit 1
  fi
fi
[ -x "$BIN/roced" ] || { echo "bench: no roced in $BIN (build first)" >&2; exit 1; }

WORK=$(mktemp -d /tmp/roced-bench.XXXXXX)
ROCED_PID=
NE_PID=
cleanup() {
  for p in $ROCED_PID $NE_PID; do kill "$p" 2>/dev/null && wait "$p" 2>/dev/null || true; done
  rm -rf "$WORK"
}
trap cleanup EXIT

# --- the sysfs tree -------------------------------------------------------
python3 - "$WORK/sys" <<'PY'
import os, sys, random
root = sys.argv[1]
rnd = random.Random(6)

def w(path, text):
    path = os.path.join(root, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text + "\n")

def l(path, target):
    path = os.path.join(root, path)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    os.symlink(target, path)

PMA = ["symbol_error", "link_error_recovery", "link_downed", "port_rcv_errors",
       "port_rcv_remote_physical_errors", "port_rcv_switch_relay_errors", "port_xmit_discards",
       "port_xmit_constraint_errors", "port_rcv_constraint_errors", "local_link_integrity_errors",
       "excessive_buffer_overrun_errors", "VL15_dropped", "port_xmit_wait", "port_xmit_data",
       "port_rcv_data", "port_xmit_packets", "port_rcv_packets", "unicast_xmit_packets",
       "unicast_rcv_packets", "multicast_xmit_packets", "multicast_rcv_packets"]
# mlx5_ib's port counters on a ConnectX-6 Dx with a 6.x kernel (q counters,
# congestion counters, extended counters).
HW = ["duplicate_request", "implied_nak_seq_err", "local_ack_timeout_err", "np_cnp_sent",
      "np_ecn_marked_roce_packets", "out_of_buffer", "out_of_sequence", "packet_seq_err",
      "req_cqe_error", "req_cqe_flush_error", "req_remote_access_errors",
      "req_remote_invalid_request", "req_rnr_retries_exceeded", "req_transport_retries_exceeded",
      "resp_cqe_error", "resp_cqe_flush_error", "resp_local_length_error",
      "resp_remote_access_errors", "rnr_nak_retry_err", "roce_adp_retrans", "roce_adp_retrans_to",
      "roce_slow_restart", "roce_slow_restart_cnps", "roce_slow_restart_trans", "rp_cnp_handled",
      "rp_cnp_ignored", "rx_atomic_requests", "rx_dct_connect", "rx_icrc_encapsulated",
      "rx_read_requests", "rx_write_requests", "cc_rx_ce_pkts", "cc_rx_cnp_pkts", "cc_tx_cnp_pkts"]

for d in range(16):
    bdf = f"0000:{0x10 + d:02x}:00.0"
    dev = f"devices/pci0000:00/0000:00:{d + 1:02x}.0/{bdf}"
    for f, v in [("vendor", "0x15b3"), ("device", "0x101d"), ("numa_node", str(d // 8)),
                 ("current_link_speed", "16.0 GT/s PCIe"), ("current_link_width", "16"),
                 ("max_link_speed", "16.0 GT/s PCIe"), ("max_link_width", "16")]:
        w(f"{dev}/{f}", v)
    l(f"{dev}/driver", "../../../../bus/pci/drivers/mlx5_core")
    ib = f"{dev}/infiniband/mlx5_{d}"
    l(f"class/infiniband/mlx5_{d}", f"../../{ib}")
    l(f"{ib}/device", "../../../" + bdf)
    for f, v in [("fw_ver", "22.36.1010"), ("board_id", "MT_0000000359"), ("hca_type", "MT4125"),
                 ("node_type", "1: CA"), ("node_guid", f"b8ce:f603:00{d:02x}:3ce0"),
                 ("sys_image_guid", f"b8ce:f603:00{d:02x}:3ce0")]:
        w(f"{ib}/{f}", v)
    for p in (1, 2):
        nd = f"ens{d + 1}f{p - 1}"
        net = f"{dev}/net/{nd}"
        for f, v in [("mtu", "9000"), ("operstate", "up"), ("ifindex", str(100 + 2 * d + p)),
                     ("dev_port", str(p - 1)), ("address", f"b8:ce:f6:5a:{d:02x}:{p:02x}"),
                     ("type", "1")]:
            w(f"{net}/{f}", v)
        l(f"class/net/{nd}", f"../../{net}")
        port = f"{ib}/ports/{p}"
        for f, v in [("state", "4: ACTIVE"), ("phys_state", "5: LinkUp"),
                     ("rate", "100 Gb/sec (2X HDR)"), ("link_layer", "Ethernet"), ("lid", "0x0"),
                     ("lid_mask_count", "0"), ("sm_lid", "0x0"), ("sm_sl", "0"),
                     ("cap_mask", "0x00010000")]:
            w(f"{port}/{f}", v)
        for i in range(4):
            w(f"{port}/gids/{i}", "0000:0000:0000:0000:0000:0000:0000:0000")
        w(f"{port}/gids/1", f"0000:0000:0000:0000:0000:ffff:0a00:{d:02x}{p:02x}")
        w(f"{port}/gid_attrs/types/1", "RoCE v2")
        w(f"{port}/gid_attrs/ndevs/1", nd)
        for c in PMA:
            w(f"{port}/counters/{c}", str(rnd.randrange(0, 1 << 40)))
        for c in HW:
            w(f"{port}/hw_counters/{c}", str(rnd.randrange(0, 1 << 32)))
        w(f"{port}/hw_counters/lifespan", "10")
PY
files=$(find "$WORK/sys" -path '*counters/*' -type f | wc -l)
echo "sysfs tree: 16 devices x 2 ports, $files counter files under $WORK/sys"

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ROCED_PORT=$(free_port)
NE_PORT=$(free_port)
printf 'apiVersion: roced/v1\nkind: NodeConfig\nmode: observe\n' >"$WORK/roced.yaml"

"$BIN/roced" --sysfs-root "$WORK/sys" --config "$WORK/roced.yaml" --grpc-listen 127.0.0.1:0 --insecure \
  --metrics-listen "127.0.0.1:$ROCED_PORT" --socket "$WORK/roced.sock" --state-dir "$WORK/state" \
  --log-level warning 2>"$WORK/roced.log" &
ROCED_PID=$!
"$NODE_EXPORTER" --collector.disable-defaults --collector.infiniband --path.sysfs="$WORK/sys" \
  --web.listen-address="127.0.0.1:$NE_PORT" 2>"$WORK/node_exporter.log" &
NE_PID=$!

for _ in $(seq 1 100); do
  curl -sf "http://127.0.0.1:$ROCED_PORT/metrics" >/dev/null 2>&1 &&
    curl -sf "http://127.0.0.1:$NE_PORT/metrics" >/dev/null 2>&1 && break
  sleep 0.1
done

echo "date: $(date -u +%Y-%m-%dT%H:%MZ); machine: $(nproc) CPUs, $(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1), $(uname -r), load $(cut -d' ' -f1-3 /proc/loadavg)"
echo "$("$BIN/roced" --version | head -1); $("$NODE_EXPORTER" --version 2>&1 | head -1)"
echo "off on this tree (not the live /sys): ethtool statistics, DCB netlink collector, PFC watchdog pause polling, verbs contexts"

python3 - "$ROCED_PORT" "$NE_PORT" "$ROCED_PID" "$NE_PID" "$SCRAPES" <<'PY'
import gzip, http.client, statistics, sys, time

roced_port, ne_port, roced_pid, ne_pid, n = (int(a) for a in sys.argv[1:6])

# What Prometheus 2.42 (Debian 12) sends with every scrape.
PROMETHEUS_HEADERS = {
    "Accept": "application/openmetrics-text;version=1.0.0,application/openmetrics-text;"
              "version=0.0.1;q=0.75,text/plain;version=0.0.4;q=0.5,*/*;q=0.1",
    "Accept-Encoding": "gzip",
    "X-Prometheus-Scrape-Timeout-Seconds": "10",
}

def scrape(port, headers):
    t0 = time.perf_counter()
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    c.request("GET", "/metrics", headers=headers)
    r = c.getresponse()
    body = r.read()
    c.close()
    dt = time.perf_counter() - t0
    if r.status != 200:
        raise SystemExit(f"scrape of port {port} answered {r.status}")
    wire = len(body)
    if r.getheader("Content-Encoding") == "gzip":
        body = gzip.decompress(body)
    return dt, body, wire

def rss_kib(pid, field="VmRSS", path="status"):
    for line in open(f"/proc/{pid}/{path}"):
        if line.startswith(field + ":"):
            return int(line.split()[1])
    return 0

def series(body, prefix):
    return sum(1 for l in body.decode().splitlines() if l.startswith(prefix))

for _ in range(10):  # warm-up: caches, lazy allocations, first rescan
    scrape(roced_port, {})
    scrape(ne_port, {})

def run(headers):
    times = {"roced": [], "node_exporter": []}
    bodies, wire = {}, {}
    for i in range(n):
        order = [("roced", roced_port), ("node_exporter", ne_port)]
        if i % 2:
            order.reverse()  # neither always scrapes right after the other
        for name, port in order:
            dt, body, w = scrape(port, headers)
            times[name].append(dt)
            bodies[name], wire[name] = body, w
    med = {k: statistics.median(v) for k, v in times.items()}
    p90 = {k: sorted(v)[int(len(v) * 0.9)] for k, v in times.items()}
    return med, p90, bodies, wire

results = {"as Prometheus scrapes": run(PROMETHEUS_HEADERS), "plain": run({})}
rss = {"roced": rss_kib(roced_pid), "node_exporter": rss_kib(ne_pid)}
hwm = {"roced": rss_kib(roced_pid, "VmHWM"), "node_exporter": rss_kib(ne_pid, "VmHWM")}
anon = {"roced": rss_kib(roced_pid, "RssAnon"), "node_exporter": rss_kib(ne_pid, "RssAnon")}
pss = {"roced": rss_kib(roced_pid, "Pss", "smaps_rollup"),
       "node_exporter": rss_kib(ne_pid, "Pss", "smaps_rollup")}
print(f"{n} scrapes each, alternating")
for mode, (med, p90, bodies, wire) in results.items():
    rdma = {"roced": series(bodies["roced"], "roced_rdma_") + series(bodies["roced"], "roced_port_"),
            "node_exporter": series(bodies["node_exporter"], "node_infiniband_")}
    print(f"-- {mode}")
    print(f"{'':15} {'median ms':>10} {'p90 ms':>8} {'wire bytes':>11} {'text bytes':>11} {'RDMA series':>12}")
    for k in ("roced", "node_exporter"):
        print(f"{k:15} {med[k]*1e3:10.2f} {p90[k]*1e3:8.2f} {wire[k]:11d} {len(bodies[k]):11d} {rdma[k]:12d}")
    print(f"ratio roced/node_exporter, scrape time (median), {mode}: {med['roced'] / med['node_exporter']:.2f}")
print(f"{'':15} {'RSS MiB':>8} {'peak MiB':>9} {'anon MiB':>9} {'PSS MiB':>8}")
for k in ("roced", "node_exporter"):
    print(f"{k:15} {rss[k]/1024:8.1f} {hwm[k]/1024:9.1f} {anon[k]/1024:9.1f} {pss[k]/1024:8.1f}")
t_ratio = results["as Prometheus scrapes"][0]["roced"] / results["as Prometheus scrapes"][0]["node_exporter"]
m_ratio = rss["roced"] / rss["node_exporter"]
print(f"ratio roced/node_exporter: scrape time as Prometheus scrapes {t_ratio:.2f}, resident memory {m_ratio:.2f}"
      f"  (goal: both <= 0.5: {'met' if t_ratio <= 0.5 and m_ratio <= 0.5 else 'NOT met'})")
# VmRSS counts every resident page of the shared libraries a process maps
# (for roced: gRPC, protobuf, libstdc++, OpenSSL); the anonymous part is
# what the process itself allocated.
print(f"  anonymous memory ratio {anon['roced'] / anon['node_exporter']:.2f}, "
      f"PSS ratio {pss['roced'] / pss['node_exporter']:.2f}")
PY
