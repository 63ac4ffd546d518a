#!/usr/bin/env python3
"""Runs IN A LAB GUEST for pfc_storm_watchdog.sh: drives a PFC storm on the
DCB test NIC and watches, from outside the agent, both what the NIC counts and
what the agent exports, on the guest's clock.

One loop, every ~10 ms: the pause counters (rx/tx_prio<P>_pause, read with
the SIOCETHTOOL ETHTOOL_GSTATS ioctl, the same numbers `ethtool -S` prints,
without a fork per read), then a scrape of the agent's /metrics, then the
counters again
(roced_pfc_storm and roced_pfc_storm_events_total for netdev/priority). Every
sample keeps its times: the counter read's, and the scrape's request and
response times (a gauge value was rendered somewhere in between, so a flip
lies after the request of the last scrape with the old value and before the
response of the first with the new one).

Sequence: baseline (gauge must read 0); with --drain S, first congestion:
write "PRIO SPEC drain" to dcbtest/storm (pause frames at the storm's rate,
yet tx_prio<P>_packets keeps rising: the queue drains) and keep polling for
S seconds, noting every gauge value; then write the storm spec ("PRIO SPEC
stuck" after a drain, the same pause rate with tx_prio<P>_packets flat; the
NIC keeps its tick rhythm, so the pausing goes on without a gap), poll until
the gauge reads 1, keep polling for --hold seconds, write `off`, poll until
the gauge reads 0 and --after seconds more. Times are relative to the write
that made it a storm (t_start). Prints one JSON object with the figures;
pfc_storm_watchdog.sh judges them. Exit 2 on a timeout (the JSON says
where).
"""
import argparse
import array
import fcntl
import json
import re
import socket
import struct
import sys
import time
import urllib.request

SIOCETHTOOL = 0x8946
ETHTOOL_GDRVINFO = 0x03
ETHTOOL_GSTRINGS = 0x1B
ETHTOOL_GSTATS = 0x1D
ETH_SS_STATS = 1
ETH_GSTRING_LEN = 32


class Ethtool:
    def __init__(self, ifname):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.ifname = ifname.encode()
        drv = array.array("B", struct.pack("I", ETHTOOL_GDRVINFO) + b"\0" * 192)
        self._ioctl(drv)
        # struct ethtool_drvinfo: cmd, driver[32], version[32], fw_version[32],
        # bus_info[32], erom_version[32], reserved2[12], n_priv_flags, n_stats
        self.n = struct.unpack_from("I", drv, 4 + 32 * 5 + 12 + 4)[0]
        gs = array.array("B", struct.pack("III", ETHTOOL_GSTRINGS, ETH_SS_STATS, self.n)
                         + b"\0" * (self.n * ETH_GSTRING_LEN))
        self._ioctl(gs)
        raw = gs.tobytes()[12:]
        self.names = [raw[i * ETH_GSTRING_LEN:(i + 1) * ETH_GSTRING_LEN].split(b"\0")[0].decode()
                      for i in range(self.n)]

    def _ioctl(self, buf):
        addr, _ = buf.buffer_info()
        ifr = struct.pack("16sP", self.ifname, addr)
        fcntl.ioctl(self.sock.fileno(), SIOCETHTOOL, ifr)

    def read(self):
        st = array.array("B", struct.pack("II", ETHTOOL_GSTATS, self.n) + b"\0" * (8 * self.n))
        self._ioctl(st)
        vals = struct.unpack_from(f"{self.n}Q", st, 8)
        return dict(zip(self.names, vals))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--netdev", default="eth0")
    ap.add_argument("--prio", type=int, default=3)
    ap.add_argument("--metrics", required=True)
    ap.add_argument("--storm", default="1000 rx", help="RATE [rx|tx|both] after the priority")
    ap.add_argument("--drain", type=float, default=0.0,
                    help="seconds of draining congestion at the same rate before the storm")
    ap.add_argument("--hold", type=float, default=1.0)
    ap.add_argument("--after", type=float, default=0.5)
    ap.add_argument("--interval", type=float, default=0.01)
    ap.add_argument("--timeout", type=float, default=10.0)
    a = ap.parse_args()

    ctl = f"/sys/class/net/{a.netdev}/dcbtest/storm"
    et = Ethtool(a.netdev)
    keys = [f"rx_prio{a.prio}_pause", f"tx_prio{a.prio}_pause"]
    tx_key = f"tx_prio{a.prio}_packets"
    for k in keys + [tx_key]:
        if k not in et.names:
            sys.exit(f"{k} is not among {a.netdev}'s ethtool statistics")
    lbl = r'\{netdev="%s",priority="%d"\} (\S+)$' % (re.escape(a.netdev), a.prio)
    re_storm = re.compile(r"^roced_pfc_storm" + lbl, re.M)
    re_events = re.compile(r"^roced_pfc_storm_events_total" + lbl, re.M)

    counters = []  # (t, rx+tx pauses)
    sent = []      # (t, tx_prio<P>_packets), read with the first counters of a sample
    scrapes = []   # (t_req, t_resp, gauge, events)

    def sample():
        s = et.read()
        counters.append((time.time(), sum(s[k] for k in keys)))
        sent.append((counters[-1][0], s[tx_key]))
        t_req = time.time()
        text = urllib.request.urlopen(a.metrics, timeout=5).read().decode()
        t_resp = time.time()
        g, e = re_storm.search(text), re_events.search(text)
        scrapes.append((t_req, t_resp, float(g.group(1)) if g else None,
                        float(e.group(1)) if e else None))
        # and once more after the scrape: twice the counter's resolution
        s = et.read()
        counters.append((time.time(), sum(s[k] for k in keys)))
        time.sleep(a.interval)
        return scrapes[-1][2]

    out = {"keys": keys}

    def done(rc, why=""):
        out["why"] = why
        out["samples"] = len(scrapes)
        if len(scrapes) > 1:
            dts = [b[0] - p[0] for p, b in zip(scrapes, scrapes[1:])]
            out["scrape_period_max"] = max(dts)
            out["scrape_period_median"] = sorted(dts)[len(dts) // 2]
            out["scrape_duration_max"] = max(s[1] - s[0] for s in scrapes)
        print(json.dumps(out, sort_keys=True))
        sys.exit(rc)

    def poll_until(want, limit):
        end = time.time() + limit
        while sample() != want:
            if time.time() > end:
                try:
                    with open(ctl, "w") as f:
                        f.write("off\n")
                except OSError:
                    pass
                done(2, f"gauge did not read {want} within {limit} s")

    with open(ctl, "w") as f:
        f.write("off\n")
    end = time.time() + 0.3
    while time.time() < end or len(scrapes) < 3:
        sample()
    if scrapes[-1][2] != 0:
        done(2, f"gauge reads {scrapes[-1][2]} before the storm")
    out["events_before"] = scrapes[-1][3]

    # --- congestion that drains: pauses at the same rate, the queue sends
    spec = f"{a.prio} {a.storm}"
    if a.drain > 0:
        n_drain, p0, tx0 = len(scrapes), counters[-1][1], sent[-1][1]
        t_drain = time.time()
        with open(ctl, "w") as f:
            f.write(f"{spec} drain\n")
        out["t_drain"] = t_drain
        while time.time() < t_drain + a.drain:
            sample()
        out["drain_seconds"] = time.time() - t_drain
        out["drain_gauges"] = sorted(set(s[2] for s in scrapes[n_drain:]))
        out["drain_events"] = scrapes[-1][3]
        out["drain_pauses"] = counters[-1][1] - p0
        out["drain_tx_packets"] = sent[-1][1] - tx0
        spec += " stuck"
    c0 = counters[-1][1]

    # --- storm on
    n0 = len(scrapes)
    t_start = time.time()
    with open(ctl, "w") as f:
        f.write(f"{spec}\n")
    out["t_start"] = t_start
    poll_until(1, a.timeout)
    i1 = len(scrapes) - 1
    out["set_after_lo"] = scrapes[i1 - 1][0] - t_start if i1 - 1 >= n0 else 0.0
    out["set_after_hi"] = scrapes[i1][1] - t_start
    rise = next((t for t, v in counters if t >= t_start and v > c0), None)
    out["first_counted_after"] = None if rise is None else rise - t_start
    end = time.time() + a.hold
    while time.time() < end:
        sample()
    held = [s[2] for s in scrapes[i1:]]
    out["gauge_during_hold"] = sorted(set(held))
    out["events_during"] = scrapes[-1][3]
    # Packets sent while stuck, from 0.2 s after the write (a NIC tick that
    # read "drain" before it may still land) to the stop.
    stuck = [v for t, v in sent if t >= t_start + 0.2]
    out["stuck_tx_packets"] = stuck[-1] - stuck[0] if stuck else None

    # --- storm off
    t_stop = time.time()
    with open(ctl, "w") as f:
        f.write("off\n")
    out["t_stop"] = t_stop
    n_stop = len(scrapes)
    poll_until(0, a.timeout)
    i0 = len(scrapes) - 1
    end = time.time() + a.after
    while time.time() < end:
        sample()
    out["gauge_after_clear"] = sorted(set(s[2] for s in scrapes[i0:]))
    out["events_after"] = scrapes[-1][3]

    # The last increase of the pause counters: after the last read that shows
    # less than the final value, at or before the first that shows it.
    final = counters[-1][1]
    out["counted_during_storm"] = final - c0
    if final == c0:
        done(2, "the pause counters did not move during the storm")
    k = next(i for i, (_, v) in enumerate(counters) if v == final)
    inc_lo, inc_hi = counters[k - 1][0], counters[k][0]
    out["last_increase_after_stop_lo"] = inc_lo - t_stop
    out["last_increase_after_stop_hi"] = inc_hi - t_stop
    # The gauge's 1 -> 0 flip: after the request of the last scrape showing 1,
    # before the response of the first showing 0.
    flip_lo = scrapes[i0 - 1][0] if i0 - 1 >= n_stop else t_stop
    flip_hi = scrapes[i0][1]
    out["clear_after_stop_lo"] = flip_lo - t_stop
    out["clear_after_stop_hi"] = flip_hi - t_stop
    # Quiet spell before the flip, observed from outside: at least
    # flip_lo - inc_hi, at most flip_hi - inc_lo.
    out["quiet_min"] = flip_lo - inc_hi
    out["quiet_max"] = flip_hi - inc_lo
    done(0)


if __name__ == "__main__":
    main()
