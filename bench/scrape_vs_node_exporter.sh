#!/usr/bin/env bash
# Scrape cost of roced against node_exporter's infiniband collector and
# against the floor, on the same generated sysfs tree: 16 mlx5 devices x 2
# ports, each port with the extended PMA counters/ set and the hw_counters/
# set a ConnectX-6 Dx shows on a 6.x kernel. Both exporters are scraped
# alternately, 200 times each, in the same run, twice: as Prometheus scrapes
# (the Accept and Accept-Encoding: gzip headers Debian 12's Prometheus 2.42
# sends; the headline figure) and plain (no headers, uncompressed).
#
# The floor (bench/scrape_floor.cc, roced_scrape_floor) is measured in the
# same run on the same tree: the same counter files, opened once and read
# with pread, written as the same exposition lines, and gzip-compressed at
# the level roced's /metrics uses (1, agent/serve/metrics_endpoint.h) for the
# Prometheus case; no HTTP. Its iterations are interleaved with the scrapes
# (roced, node_exporter, floor, in rotating order), so each finds the
# caches as a scrape does; the same floor run back to back (every
# iteration on hot caches, which no scrape gets) is printed beside it.
# Prints the median scrape wall time of each, the ratios
# roced/node_exporter (goal <= 0.5 as Prometheus scrapes) and roced/floor
# (goal <= 2, against the interleaved floor), and the memory of both
# exporters: RSS, anonymous,
# and PSS split into what the process itself holds (its binary, heap,
# stacks) and the shared libraries it maps (goal: PSS <= node_exporter's),
# with the date and the machine.
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
# when missing and running as root), python3, and a built roced (and
# roced_scrape_floor, built with it).
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
[ -x "$BIN/roced_scrape_floor" ] || { echo "bench: no roced_scrape_floor in $BIN (build first)" >&2; exit 1; }

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

python3 - "$ROCED_PORT" "$NE_PORT" "$ROCED_PID" "$NE_PID" "$SCRAPES" "$BIN/roced_scrape_floor" "$WORK/sys" <<'PY'
import gzip, http.client, json, statistics, subprocess, sys, time

roced_port, ne_port, roced_pid, ne_pid, n = (int(a) for a in sys.argv[1:6])
floor_bin, sys_root = sys.argv[6], sys.argv[7]
GZIP_LEVEL = 1  # agent/serve/metrics_endpoint.h: kMetricsGzipLevel

def floor(level):
    """The floor back to back: every iteration on hot caches."""
    out = subprocess.run([floor_bin, "--sysfs", sys_root, "--iterations", str(n),
                          "--gzip-level", str(level)], check=True, capture_output=True, text=True)
    return json.loads(out.stdout)

class InterleavedFloor:
    """One floor iteration per call, in its own process kept running."""
    def __init__(self, level):
        self.p = subprocess.Popen([floor_bin, "--sysfs", sys_root, "--stdin", "--gzip-level",
                                   str(level)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        self.last = None
    def once(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()
        self.last = json.loads(self.p.stdout.readline())
        return self.last["ms"] / 1e3
    def close(self):
        self.p.stdin.close()
        self.p.wait()

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

def run(headers, level):
    times = {"roced": [], "node_exporter": [], "floor": []}
    bodies, wire = {}, {}
    fl = InterleavedFloor(level)
    fl.once()  # its warm-up
    for i in range(n):
        order = ["roced", "node_exporter", "floor"]
        order = order[i % 3:] + order[:i % 3]  # nobody always follows the same one
        for name in order:
            if name == "floor":
                times["floor"].append(fl.once())
                continue
            dt, body, w = scrape(roced_port if name == "roced" else ne_port, headers)
            times[name].append(dt)
            bodies[name], wire[name] = body, w
    fl.close()
    med = {k: statistics.median(v) for k, v in times.items()}
    p90 = {k: sorted(v)[int(len(v) * 0.9)] for k, v in times.items()}
    return med, p90, bodies, wire, fl.last

results = {"as Prometheus scrapes": run(PROMETHEUS_HEADERS, GZIP_LEVEL), "plain": run({}, 0)}
hot = {"as Prometheus scrapes": floor(GZIP_LEVEL), "plain": floor(0)}
rss = {"roced": rss_kib(roced_pid), "node_exporter": rss_kib(ne_pid)}
hwm = {"roced": rss_kib(roced_pid, "VmHWM"), "node_exporter": rss_kib(ne_pid, "VmHWM")}
anon = {"roced": rss_kib(roced_pid, "RssAnon"), "node_exporter": rss_kib(ne_pid, "RssAnon")}

def pss_split(pid):
    """PSS in KiB: (own: the executable, anonymous memory, heap, stacks;
    shared libraries: every other file mapping)."""
    exe = __import__("os").readlink(f"/proc/{pid}/exe")
    own = libs = 0
    name = ""
    for line in open(f"/proc/{pid}/smaps"):
        head = line.split()
        if "-" in head[0] and len(head[0]) > 8 and not line.startswith(("Pss", "Rss")):
            name = head[5] if len(head) > 5 else ""
        elif line.startswith("Pss:"):
            kib = int(head[1])
            if name.startswith("/") and name != exe:
                libs += kib
            else:
                own += kib
    return own, libs

pss = {k: pss_split(p) for k, p in (("roced", roced_pid), ("node_exporter", ne_pid))}
print(f"{n} scrapes each and {n} floor iterations, interleaved")
ratios = {}
for mode, (med, p90, bodies, wire, fl) in results.items():
    rdma = {"roced": series(bodies["roced"], "roced_rdma_") + series(bodies["roced"], "roced_port_"),
            "node_exporter": series(bodies["node_exporter"], "node_infiniband_")}
    gz = ", gzip level " + str(GZIP_LEVEL) if mode != "plain" else ""
    print(f"-- {mode}")
    print(f"{'':15} {'median ms':>10} {'p90 ms':>8} {'wire bytes':>11} {'text bytes':>11} {'RDMA series':>12}")
    for k in ("roced", "node_exporter"):
        print(f"{k:15} {med[k]*1e3:10.2f} {p90[k]*1e3:8.2f} {wire[k]:11d} {len(bodies[k]):11d} {rdma[k]:12d}")
    print(f"{'floor':15} {med['floor']*1e3:10.2f} {p90['floor']*1e3:8.2f} {fl['wire_bytes']:11d} {fl['text_bytes']:11d} {fl['series']:12d}"
          f"  (pread + format{gz}; no HTTP; interleaved with the scrapes)")
    h = hot[mode]
    print(f"{'floor, hot':15} {h['median_ms']:10.2f} {h['p90_ms']:8.2f} {'':11} {'':11} {'':12}  (the same, {n} iterations back to back)")
    ratios[mode] = (med["roced"] / med["node_exporter"], med["roced"] / med["floor"])
    print(f"ratio roced/node_exporter {ratios[mode][0]:.2f}, roced/floor {ratios[mode][1]:.2f}"
          f" (roced/hot floor {med['roced'] * 1e3 / h['median_ms']:.2f}) ({mode})")
print(f"{'':15} {'RSS MiB':>8} {'peak MiB':>9} {'anon MiB':>9} {'PSS MiB':>8} {'own':>6} {'libs':>6}")
for k in ("roced", "node_exporter"):
    own, libs = pss[k]
    print(f"{k:15} {rss[k]/1024:8.1f} {hwm[k]/1024:9.1f} {anon[k]/1024:9.1f} {(own + libs)/1024:8.1f} {own/1024:6.1f} {libs/1024:6.1f}")
t_ne, t_floor = ratios["as Prometheus scrapes"]
pss_ratio = sum(pss["roced"]) / sum(pss["node_exporter"])
ok = lambda b: "met" if b else "NOT met"
print(f"as Prometheus scrapes: roced/node_exporter {t_ne:.2f} (goal <= 0.5: {ok(t_ne <= 0.5)}), "
      f"roced/floor {t_floor:.2f} (goal <= 2: {ok(t_floor <= 2)})")
print(f"memory: PSS roced/node_exporter {pss_ratio:.2f} (goal <= 1: {ok(pss_ratio <= 1)}); "
      f"RSS {rss['roced'] / rss['node_exporter']:.2f}, anonymous {anon['roced'] / anon['node_exporter']:.2f}")
# node_exporter is one static Go binary: all its PSS is its own. roced's
# "libs" are gRPC, protobuf, OpenSSL, libstdc++ and the rest it maps; with
# another process on the node using them (sshd and libcrypto, say) they are
# shared and count for less.
PY
