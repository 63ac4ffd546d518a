#!/usr/bin/env python3
"""The soak's driver (bench/soak.sh sets the lab up and its environment).

Load threads (scrapes, applies, WatchState clients) run inside the lab's
network namespace (os.setns on their own thread); lab commands (exec,
faults) run from the main thread in the host's namespace, where the lab's
runner ports are.
"""
import ctypes
import json
import os
import re
import subprocess
import sys
import threading
import time
import urllib.request

LAB = os.environ["LAB"]
NS = os.environ["LAB_NAME"]
ROCECTL = os.environ["ROCECTL_BIN"]
NODES = [f"node{i}" for i in range(1, int(os.environ["NODES"]) + 1)]
MINUTES = float(os.environ.get("SOAK_MINUTES", "30"))
WARMUP = float(os.environ.get("SOAK_WARMUP", "120"))
FAULT_EVERY = float(os.environ.get("SOAK_FAULT_EVERY", "300"))
GRACE = float(os.environ.get("SOAK_GRACE", "45"))
OUT = os.environ["SOAK_OUT"]
GRPC_PORT, METRICS_PORT = 7471, 9471
STOP = threading.Event()
T0 = time.time()


def log(msg):
    print(f"[soak {time.time() - T0:7.1f}s] {msg}", flush=True)


def addr(node):
    return f"192.168.77.{10 + int(node[4:])}"


def lab(*args, timeout=120, check=True):
    r = subprocess.run([LAB, *args], capture_output=True, text=True, timeout=timeout)
    if check and r.returncode != 0:
        raise RuntimeError(f"lab {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()}")
    return r.stdout


LIBC = ctypes.CDLL("libc.so.6", use_errno=True)
CLONE_NEWNET = 0x40000000


def in_netns():
    """Moves the calling thread (and what it spawns) into the lab's netns."""
    fd = os.open(f"/run/netns/{NS}", os.O_RDONLY)
    try:
        if LIBC.setns(fd, CLONE_NEWNET) != 0:
            raise OSError(ctypes.get_errno(), f"setns {NS}")
    finally:
        os.close(fd)


def rocectl(node, *args, timeout=60):
    """rocectl against a node's agent; run from a thread inside the netns."""
    return subprocess.run([ROCECTL, "--target", f"{addr(node)}:{GRPC_PORT}", "--timeout", "30s", *args],
                          capture_output=True, text=True, timeout=timeout)


# ------------------------------------------------------------- measuring
def sample(node, times=5, gap=3.0):
    """`times` readings `gap` s apart: the median of each figure, and the
    least and most fds and threads seen (gRPC's pools come and go by a
    thread or two: growth is judged on the ranges, not one reading).
    Readings that failed are left out; when all did, the last error."""
    reads = []
    for i in range(times):
        if i:
            time.sleep(gap)
        reads.append(read_once(node))
    good = [r for r in reads if "error" not in r]
    if not good:
        return reads[-1]
    reads = good
    out = {k: sorted(r[k] for r in reads)[len(reads) // 2] for k in reads[0]}
    for k in ("fds", "threads"):
        out[k + "_min"] = min(r[k] for r in reads)
        out[k + "_max"] = max(r[k] for r in reads)
    out["pid"] = reads[-1]["pid"] if len({r["pid"] for r in reads}) == 1 else -1
    return out


def read_once(node):
    """What the node's agent holds now (read inside the guest)."""
    script = r"""
pid=$(pgrep -x roced | head -n1)
[ -n "$pid" ] || { echo '{"error": "roced not running"}'; exit 0; }
fds=$(ls /proc/$pid/fd | wc -l)
thr=$(awk '/^Threads:/ {print $2}' /proc/$pid/status)
rss=$(awk '/^VmRSS:/ {print $2}' /proc/$pid/status)
anon=$(awk '/^RssAnon:/ {print $2}' /proc/$pid/status)
# rdma's text output has "pid N" per resource; no python3 in the guest (its
# start-up alone took 20 s in a loaded TCG guest).
qps=$(rdma res show qp 2>/dev/null | grep -c " pid $pid ")
mrs=$(rdma res show mr 2>/dev/null | grep -c " pid $pid ")
echo "{\"pid\": $pid, \"fds\": $fds, \"threads\": $thr, \"rss_kb\": $rss, \"anon_kb\": $anon, \"qps\": $qps, \"mrs\": $mrs}"
"""
    # A saturated TCG guest can miss one exec's deadline: that reading is
    # an error (the others of the sample still count), not the end of the
    # soak and its report.
    try:
        return json.loads(lab("exec", "-t", "120", node, "--", "sh", "-c", script).strip().splitlines()[-1])
    except (RuntimeError, ValueError, IndexError) as e:
        return {"error": f"{node}: {e}".splitlines()[0]}


FAIL_RE = re.compile(r'^roced_probe_failures_total\{(?P<labels>[^}]*)\} (?P<value>\S+)$')


def parse_failures(text):
    out = {}
    for line in text.splitlines():
        m = FAIL_RE.match(line)
        if not m:
            continue
        labels = dict(re.findall(r'(\w+)="([^"]*)"', m.group("labels")))
        key = (labels.get("peer", "?"), labels.get("kind", "?"), labels.get("reason", "?"))
        out[key] = float(m.group("value"))
    return out


class Stats:
    def __init__(self):
        self.lock = threading.Lock()
        self.failures = []  # (t, node, peer, kind, reason, count)
        self.scrapes = {n: [0, 0] for n in NODES}  # ok, failed
        self.applies = {n: [0, 0] for n in NODES}
        self.apply_errors = []
        self.events = {n: [0, 0, 0] for n in NODES}  # streams ended ok, streams failed, events
        self.faults = []  # dicts: name, node, start, end


STATS = Stats()


def scraper(node):
    in_netns()
    last = None
    url = f"http://{addr(node)}:{METRICS_PORT}/metrics"
    while not STOP.is_set():
        t = time.time()
        try:
            text = urllib.request.urlopen(url, timeout=5).read().decode()
            now = parse_failures(text)
            with STATS.lock:
                STATS.scrapes[node][0] += 1
                if last is not None:
                    for key, v in now.items():
                        d = v - last.get(key, 0.0)
                        if d < 0:
                            d = v  # the agent restarted: counters from 0
                        if d > 0:
                            STATS.failures.append((t - T0, node, *key, d))
            last = now
        except Exception:  # noqa: BLE001 - a failed scrape is counted, the loop goes on
            with STATS.lock:
                STATS.scrapes[node][1] += 1
        STOP.wait(max(0.0, 1.0 - (time.time() - t)))


QOS = {
    "a": "interfaces:\n  - match: {netdev: eth0}\n    qos: {trust: dscp, dscp_to_priority: {26: 3}, pfc: {priorities: [3]}}\n",
    "b": "interfaces:\n  - match: {netdev: eth0}\n    qos: {trust: dscp, dscp_to_priority: {26: 4}, pfc: {priorities: [4]}}\n",
}


def config_files(node):
    logdir = lab("logdir", node).strip()
    base = open(os.path.join(logdir, "roced.yaml")).read()
    paths = {}
    for k, qos in QOS.items():
        p = f"/tmp/{NS}-soak-{node}-{k}.yaml"
        with open(p, "w") as f:
            f.write(base.rstrip("\n") + "\n" + qos)
        paths[k] = p
    return paths


def applier(files):
    in_netns()
    turn = 0
    while not STOP.is_set():
        t = time.time()
        which = "ab"[turn % 2]
        turn += 1
        for node in NODES:
            r = rocectl(node, "-o", "json", "apply", "-f", files[node][which])
            with STATS.lock:
                STATS.applies[node][0 if r.returncode == 0 else 1] += 1
                if r.returncode != 0:
                    STATS.apply_errors.append((t - T0, node, (r.stderr or r.stdout).strip()[:300]))
        STOP.wait(max(0.0, 10.0 - (time.time() - t)))


def watcher(node):
    in_netns()
    while not STOP.is_set():
        ok = False
        try:
            r = rocectl(node, "-o", "json", "events", "--for", "60s", timeout=90)
            ok = r.returncode == 0
            lines = [line for line in r.stdout.splitlines() if line.strip()]
            with STATS.lock:
                STATS.events[node][2] += len(lines)
        except subprocess.TimeoutExpired:
            pass
        with STATS.lock:
            STATS.events[node][0 if ok else 1] += 1
        if not ok:
            STOP.wait(2)


# ------------------------------------------------------------- faults
def f_cut():
    lab("cut", "node2")
    time.sleep(10)
    lab("restore", "node2")


def f_restart_loop():
    for _ in range(3):
        lab("agent", "restart", "node3", timeout=180)
        time.sleep(5)


def f_rxe():
    lab("rxe-remove", "node2", timeout=90)
    time.sleep(5)
    lab("rxe-add", "node2")


def f_sigstop():
    lab("kill", "node2", "roced", "--signal", "STOP")
    time.sleep(12)
    lab("kill", "node2", "roced", "--signal", "CONT")


def f_loss():
    lab("netem", "node3", "loss", "5%")
    time.sleep(20)
    lab("netem", "node3", "clear")


def f_module():
    lab("exec", "node1", "--", "sh", "-c",
        ". /lab/node.env; rmmod roce_dcbtest; sleep 5; insmod $KCACHE/module/roce_dcbtest.ko ifname=eth0")


FAULTS = [("link cut node2 10 s", "node2", f_cut), ("agent restart loop node3 (3x)", "node3", f_restart_loop),
          ("rxe remove/add node2", "node2", f_rxe), ("SIGSTOP node2's agent 12 s", "node2", f_sigstop),
          ("5% loss node3 20 s", "node3", f_loss), ("DCB test module reload node1", "node1", f_module)]


# ------------------------------------------------------------- report
def in_fault(t, node, peer):
    for f in STATS.faults:
        if f["start"] - 2 <= t <= f["end"] + GRACE:
            return f["name"]
    return None


def main():
    log(f"{len(NODES)} nodes, {MINUTES} min, a fault every {FAULT_EVERY:.0f} s, grace {GRACE:.0f} s")
    files = {n: config_files(n) for n in NODES}
    boot = {n: sample(n) for n in NODES}
    log(f"before any load: {json.dumps(boot)}")
    threads = [threading.Thread(target=scraper, args=(n,), daemon=True) for n in NODES]
    threads += [threading.Thread(target=watcher, args=(n,), daemon=True) for n in NODES]
    threads.append(threading.Thread(target=applier, args=(files,), daemon=True))
    for t in threads:
        t.start()
    # The start sample after a warm-up under the full load: gRPC's and
    # civetweb's pools grow to what the load needs in the first minutes.
    time.sleep(WARMUP)
    start = {n: sample(n) for n in NODES}
    log(f"start (after {WARMUP:.0f} s of load): {json.dumps(start)}")
    t_start = time.time()
    end_at = t_start + MINUTES * 60
    next_fault = t_start + FAULT_EVERY / 2
    i = 0
    while time.time() < end_at:
        if time.time() >= next_fault and next_fault + 60 < end_at:
            name, node, fn = FAULTS[i % len(FAULTS)]
            i += 1
            f = {"name": name, "node": node, "start": time.time() - T0}
            log(f"fault: {name}")
            try:
                fn()
            except Exception as e:  # noqa: BLE001 - recorded, the soak goes on
                f["error"] = str(e)
                log(f"fault {name} failed: {e}")
            f["end"] = time.time() - T0
            STATS.faults.append(f)
            next_fault += FAULT_EVERY
        time.sleep(1)
    STOP.set()
    # The last apply alternates; leave each node's WatchState client to end.
    for t in threads:
        t.join(timeout=100)
    end = {n: sample(n) for n in NODES}
    log(f"end: {json.dumps(end)}")
    return report(boot, start, end)


def report(boot, start, end):
    ok = True
    print(f"\n{MINUTES:.0f} min after a {WARMUP:.0f} s warm-up (start -> end):")
    print("(medians of 5 readings 3 s apart; fds and threads judged on their ranges)")
    print("\n| node | pid | fds | threads | QPs | MRs | RSS kB | anon kB |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    verdicts = []
    for n in NODES:
        s, e = start[n], end[n]
        cells = [f"{s.get(k)} -> {e.get(k)}" for k in ("pid", "fds", "threads", "qps", "mrs", "rss_kb", "anon_kb")]
        print(f"| {n} | " + " | ".join(cells) + " |")
        if "error" in s or "error" in e:
            verdicts.append(f"FAIL {n}: {s.get('error') or e.get('error')}")
            ok = False
            continue
        if s["pid"] != e["pid"]:
            verdicts.append(f"note {n}: agent restarted by a fault (pid {s['pid']} -> {e['pid']}): growth not judged")
            continue
        for k in ("fds", "threads"):
            if e[k + "_min"] > s[k + "_max"]:
                verdicts.append(f"FAIL {n}: {k} grew: at least {e[k + '_min']} at the end, at most {s[k + '_max']} at the start")
                ok = False
            else:
                verdicts.append(f"ok   {n}: {k} {s[k + '_min']}-{s[k + '_max']} at the start, {e[k + '_min']}-{e[k + '_max']} at the end")
        for k in ("qps", "mrs"):
            if e[k] > s[k]:
                verdicts.append(f"FAIL {n}: {k} grew {s[k]} -> {e[k]}")
                ok = False
        ratio = e["rss_kb"] / s["rss_kb"]
        verdicts.append(f"{'ok  ' if ratio <= 1.05 else 'FAIL'} {n}: RSS ratio end/start {ratio:.3f} (goal <= 1.05)")
        ok = ok and ratio <= 1.05
    inside, outside = {}, []
    for (t, node, peer, kind, reason, count) in STATS.failures:
        w = in_fault(t, node, peer)
        if w:
            inside.setdefault((w, node, peer, reason), 0)
            inside[(w, node, peer, reason)] += count
        else:
            outside.append((round(t, 1), node, peer, kind, reason, count))
    print("\nfaults:")
    for f in STATS.faults:
        print(f"  {f['start']:7.1f}-{f['end']:7.1f} s  {f['name']}{'  (failed: ' + f['error'] + ')' if 'error' in f else ''}")
    print("\nfailed probes inside fault windows (fault, prober, peer, reason: count):")
    for (w, node, peer, reason), c in sorted(inside.items()):
        print(f"  {w}: {node} -> {peer} {reason}: {c:.0f}")
    print(f"\nfailed probes outside fault windows: {len(outside)}")
    for o in outside[:50]:
        print(f"  t={o[0]} s {o[1]} -> {o[2]} {o[3]} {o[4]}: {o[5]:.0f}")
    ok = ok and not outside
    print("\nload: scrapes ok/failed " + ", ".join(f"{n} {v[0]}/{v[1]}" for n, v in STATS.scrapes.items()))
    print("      applies ok/failed " + ", ".join(f"{n} {v[0]}/{v[1]}" for n, v in STATS.applies.items()))
    print("      WatchState streams ok/failed, events " +
          ", ".join(f"{n} {v[0]}/{v[1]}, {v[2]}" for n, v in STATS.events.items()))
    for e in STATS.apply_errors[:10]:
        print(f"      apply failed t={e[0]:.1f} s {e[1]}: {e[2]}")
    print()
    for v in verdicts:
        print(v)
    print("soak:", "every goal met" if ok else "goals missed (see FAIL lines and failures outside fault windows)")
    with open(OUT, "w") as f:
        json.dump({"boot": boot, "warmup_s": WARMUP, "start": start, "end": end, "faults": STATS.faults, "failures": STATS.failures,
                   "outside": outside, "scrapes": STATS.scrapes, "applies": STATS.applies,
                   "apply_errors": STATS.apply_errors, "events": STATS.events, "verdicts": verdicts, "ok": ok},
                  f, indent=1)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
