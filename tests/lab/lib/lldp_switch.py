#!/usr/bin/env python3
"""A switch stand-in for the lab: sends LLDPDUs on one node's tap, in the lab
namespace, the way a ToR switch advertises itself and its DCB settings.

Run it inside the lab namespace (ip netns exec $(lab netns) ...): it sends
from tap-nodeN, so the frames reach that node's eth0 directly (a bridge
does not forward the nearest-bridge group address). It runs until killed
(SIGTERM/SIGINT), or for --count frames. Nothing is sent on a shutdown
unless --shutdown-on-exit (then one LLDPDU with TTL 0, which makes a
listener forget the switch at once instead of after the TTL).

Examples:
  lldp_switch.py --tap tap-node1 --pfc 4 --app 26:3 --max-frame 9216
  lldp_switch.py --tap tap-node1 --cee --pfc 3 --app-ethertype 0x8906:3
  lldp_switch.py --pcap /tmp/f.pcap --pfc 3 --count 1   (write, do not send)

The encoding follows IEEE 802.1AB (TLV header: type << 9 | length), 802.1Qaz
(OUI 00-80-C2: ETS 9, 10; PFC 11; APP 12), 802.3 (OUI 00-12-0F subtype 4)
and CEE DCBX 1.01 (OUI 00-1B-21 subtype 2, feature sub-TLVs 1-4).
"""
import argparse
import signal
import socket
import struct
import sys
import time

NEAREST_BRIDGE = bytes.fromhex("0180c200000e")
ETH_P_LLDP = 0x88CC


def tlv(kind, value):
    return struct.pack(">H", (kind << 9) | len(value)) + value


def org(oui, subtype, body):
    return tlv(127, oui.to_bytes(3, "big") + bytes([subtype]) + body)


def prio_mask(text):
    """'3,4' -> bit mask; '' -> 0."""
    mask = 0
    for p in filter(None, text.split(",")):
        if not 0 <= int(p) <= 7:
            raise SystemExit(f"--pfc: priority {p} is out of range 0-7")
        mask |= 1 << int(p)
    return mask


def pairs(text, what, proto_max):
    """'26:3,48:6' -> [(26, 3), (48, 6)] (protocol, priority)."""
    out = []
    for item in filter(None, (text or "").split(",")):
        proto, _, prio = item.partition(":")
        proto, prio = int(proto, 0), int(prio)
        if not (0 <= proto <= proto_max and 0 <= prio <= 7):
            raise SystemExit(f"{what}: {item} needs protocol 0-{proto_max} and priority 0-7")
        out.append((proto, prio))
    return out


def nibbles(prio_tc):
    return bytes((prio_tc[i] << 4) | prio_tc[i + 1] for i in range(0, 8, 2))


def ieee_tlvs(a):
    out = b""
    if a.pfc is not None:
        flags = (0x80 if a.willing else 0) | 8  # capability: 8 priorities
        out += org(0x0080C2, 11, bytes([flags, prio_mask(a.pfc)]))
    if a.ets_prio_tc:
        tcs = [int(x) for x in a.ets_prio_tc.split(",")]
        bw = [int(x) for x in a.ets_bw.split(",")]
        out += org(0x0080C2, 9, bytes([0x80 if a.willing else 0]) + nibbles(tcs) + bytes(bw) + bytes([2] * 8))
    apps = [((prio << 5) | 5, dscp) for dscp, prio in pairs(a.app, "--app", 63)]
    apps += [((prio << 5) | 1, et) for et, prio in pairs(a.app_ethertype, "--app-ethertype", 0xFFFF)]
    if apps:
        out += org(0x0080C2, 12, b"\x00" + b"".join(struct.pack(">BH", b, p) for b, p in apps))
    return out


def cee_feature(kind, body, willing):
    flags = 0x80 | (0x40 if willing else 0)
    value = bytes([0, 0, flags, 0]) + body
    return struct.pack(">H", (kind << 9) | len(value)) + value


def cee_tlv(a):
    """One CEE DCBX TLV: control, then PG/PFC/APP features as asked."""
    subs = struct.pack(">H", (1 << 9) | 10) + bytes([0, 0]) + struct.pack(">II", 1, 0)
    if a.ets_prio_tc:
        tcs = [int(x) for x in a.ets_prio_tc.split(",")]
        bw = [int(x) for x in a.ets_bw.split(",")]
        subs += cee_feature(2, nibbles(tcs) + bytes(bw) + bytes([8]), a.willing)
    if a.pfc is not None:
        subs += cee_feature(3, bytes([prio_mask(a.pfc), 8]), a.willing)
    entries = b""
    for et, prio in pairs(a.app_ethertype, "--app-ethertype", 0xFFFF):
        entries += struct.pack(">HBHB", et, 0x00, 0x1B21, 1 << prio)  # selector 0: EtherType
    if entries:
        subs += cee_feature(4, entries, a.willing)
    return org(0x001B21, 2, subs)


def lldpdu(a, ttl):
    mac = bytes.fromhex(a.chassis.replace(":", ""))
    pdu = tlv(1, b"\x04" + mac) + tlv(2, b"\x05" + a.port.encode()) + tlv(3, struct.pack(">H", ttl))
    pdu += tlv(5, a.system_name.encode()) + tlv(4, f"to {a.tap or 'a host'}".encode())
    if a.max_frame:
        pdu += org(0x00120F, 4, struct.pack(">H", a.max_frame))
    pdu += cee_tlv(a) if a.cee else ieee_tlvs(a)
    return NEAREST_BRIDGE + mac + struct.pack(">H", ETH_P_LLDP) + pdu + tlv(0, b"")


def write_pcap(path, frames):
    with open(path, "wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for fr in frames:
            f.write(struct.pack("<IIII", 0, 0, len(fr), len(fr)) + fr)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--tap", help="interface to send on (tap-nodeN in the lab namespace)")
    p.add_argument("--pcap", help="write the frames to this pcap file instead of sending them")
    p.add_argument("--frame-out", help="write one frame's bytes to this file instead of sending it")
    p.add_argument("--system-name", default="lab-tor1")
    p.add_argument("--port", default="Ethernet1", help="port ID (interface name subtype)")
    p.add_argument("--chassis", default="02:00:5e:00:53:01", help="chassis ID and source MAC")
    p.add_argument("--ttl", type=int, default=120, help="TTL advertised, seconds (default 120)")
    p.add_argument("--interval", type=float, default=1.0, help="seconds between frames (default 1)")
    p.add_argument("--count", type=int, default=0, help="frames to send, then exit (0: until killed)")
    p.add_argument("--pfc", help="PFC-enabled priorities, e.g. 3 or 3,4 ('' for none; absent: no PFC TLV)")
    p.add_argument("--willing", action="store_true", help="set the willing bit")
    p.add_argument("--app", help="DSCP application entries DSCP:PRIO,... (IEEE only)")
    p.add_argument("--app-ethertype", help="EtherType application entries ETYPE:PRIO,...")
    p.add_argument("--ets-prio-tc", help="priority to TC, 8 comma-separated values")
    p.add_argument("--ets-bw", default="50,50,0,0,0,0,0,0", help="TC bandwidth percent, 8 values")
    p.add_argument("--max-frame", type=int, help="IEEE 802.3 maximum frame size")
    p.add_argument("--cee", action="store_true", help="pre-standard CEE DCBX TLVs instead of IEEE")
    p.add_argument("--shutdown-on-exit", action="store_true", help="send a TTL 0 LLDPDU when stopped")
    a = p.parse_args()
    if not (a.tap or a.pcap or a.frame_out):
        p.error("--tap, --pcap or --frame-out is required")
    if a.frame_out:
        with open(a.frame_out, "wb") as f:
            f.write(lldpdu(a, a.ttl))
        return 0
    if a.pcap:
        write_pcap(a.pcap, [lldpdu(a, a.ttl)] * max(a.count, 1))
        return 0
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((a.tap, 0))
    stopping = []
    signal.signal(signal.SIGTERM, lambda *_: stopping.append(1))
    signal.signal(signal.SIGINT, lambda *_: stopping.append(1))
    sent = 0
    while not stopping and (a.count == 0 or sent < a.count):
        s.send(lldpdu(a, a.ttl))
        sent += 1
        deadline = time.monotonic() + a.interval
        while not stopping and time.monotonic() < deadline:
            time.sleep(0.05)
    if a.shutdown_on_exit:
        s.send(lldpdu(a, 0))
    print(f"lldp_switch: sent {sent} LLDPDU(s) on {a.tap}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
