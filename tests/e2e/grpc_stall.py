#!/usr/bin/env python3
"""A raw HTTP/2 gRPC client that stalls the agent the way an attacker would.

  grpc_stall.py nocert --target HOST:PORT --ca CA
      TLS with ALPN h2 and no client certificate, then the HTTP/2 preface.
      Exit 0 when the agent refused (handshake alert or closed connection
      before any HTTP/2 frame), 1 when it answered with HTTP/2 frames.

  grpc_stall.py stall --target HOST:PORT --ca CA --cert CRT --key KEY
                      --path /pkg.Service/Method [--connections 3]
                      [--streams 100] [--hold SECONDS] --report FILE
      Opens CONNECTIONS connections whose HTTP/2 initial flow-control window
      is 0, starts STREAMS calls of PATH (an empty request message) on each,
      and never sends WINDOW_UPDATE: the agent can send headers and
      trailers, no message. Writes a JSON report to FILE whenever something
      changes (streams opened, each stream's grpc-status, the first message
      of each status, connections the agent closed) and holds the
      connections HOLD seconds (or until killed).

Uses Debian's python3-h2 (scripts/setup-deps.sh).
"""
import argparse
import json
import os
import select
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
import h2.settings


def tls_socket(host, port, ca, cert=None, key=None):
    ctx = ssl.create_default_context(ssl.Purpose.SERVER_AUTH, cafile=ca)
    ctx.check_hostname = False
    ctx.set_alpn_protocols(["h2"])
    if cert:
        ctx.load_cert_chain(cert, key)
    raw = socket.create_connection((host, port), timeout=5)
    return ctx.wrap_socket(raw, server_hostname=host)


def split_target(target):
    host, _, port = target.rpartition(":")
    return host.strip("[]"), int(port)


def nocert(args):
    host, port = split_target(args.target)
    try:
        sock = tls_socket(host, port, args.ca)
        if sock.selected_alpn_protocol() != "h2":
            print("refused: no h2 (ALPN %r)" % sock.selected_alpn_protocol())
            return 0
        conn = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True))
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        data = sock.recv(65535)  # TLS 1.3: a refused certificate arrives here as an alert
    except (ssl.SSLError, ConnectionError, socket.timeout) as e:
        print("refused: %s" % e)
        return 0
    if not data:
        print("refused: the agent closed the connection")
        return 0
    events = conn.receive_data(data)
    print("accepted: the agent answered with HTTP/2 %s" % [type(e).__name__ for e in events])
    return 1


class Stall:
    def __init__(self, args):
        self.args = args
        self.report = {"opened": 0, "status": {}, "messages": {}, "closed_connections": 0, "connections": 0}
        self.conns = []  # (sock, h2 connection)

    def write_report(self):
        tmp = self.args.report + ".tmp"
        with open(tmp, "w") as f:
            json.dump(self.report, f)
        os.replace(tmp, self.args.report)

    def open_connection(self):
        host, port = split_target(self.args.target)
        sock = tls_socket(host, port, self.args.ca, self.args.cert, self.args.key)
        config = h2.config.H2Configuration(client_side=True, header_encoding="utf-8")
        conn = h2.connection.H2Connection(config)
        conn.local_settings = h2.settings.Settings(
            client=True, initial_values={h2.settings.SettingCodes.INITIAL_WINDOW_SIZE: 0,
                                         h2.settings.SettingCodes.ENABLE_PUSH: 0})
        conn.initiate_connection()
        sock.sendall(conn.data_to_send())
        sock.setblocking(False)
        self.conns.append((sock, conn))
        self.report["connections"] += 1

    def start_streams(self, sock, conn):
        headers = [(":method", "POST"), (":scheme", "https"), (":path", self.args.path),
                   (":authority", "localhost"), ("content-type", "application/grpc"), ("te", "trailers")]
        for _ in range(self.args.streams):
            sid = conn.get_next_available_stream_id()
            conn.send_headers(sid, headers)
            conn.send_data(sid, b"\x00\x00\x00\x00\x00", end_stream=True)  # one empty message
            self.report["opened"] += 1
        self.flush(sock, conn)

    @staticmethod
    def flush(sock, conn):
        out = conn.data_to_send()
        while out:
            try:
                n = sock.send(out)
                out = out[n:]
            except (ssl.SSLWantWriteError, BlockingIOError):
                select.select([], [sock], [], 1)

    def on_events(self, events):
        for e in events:
            if isinstance(e, (h2.events.ResponseReceived, h2.events.TrailersReceived)):
                h = dict(e.headers)
                if "grpc-status" in h:
                    code = h["grpc-status"]
                    self.report["status"][code] = self.report["status"].get(code, 0) + 1
                    self.report["messages"].setdefault(code, h.get("grpc-message", ""))
            elif isinstance(e, h2.events.ConnectionTerminated):
                self.report["closed_connections"] += 1
        return bool(events)

    def pump(self, deadline):
        """Reads what the agent sends (headers, trailers, settings, pings) until deadline."""
        while time.monotonic() < deadline:
            live = [(s, c) for s, c in self.conns if s.fileno() >= 0]
            if not live:
                time.sleep(0.2)
                continue
            ready, _, _ = select.select([s for s, _ in live], [], [], 0.5)
            changed = False
            for sock, conn in live:
                if sock not in ready:
                    continue
                try:
                    data = sock.recv(65535)
                except (ssl.SSLWantReadError, BlockingIOError):
                    continue
                except (ssl.SSLError, OSError):
                    data = b""
                if not data:
                    self.report["closed_connections"] += 1
                    sock.close()
                    changed = True
                    continue
                changed |= self.on_events(conn.receive_data(data))
                self.flush(sock, conn)  # settings and ping acks; never a WINDOW_UPDATE
            if changed:
                self.write_report()

    def run(self):
        for _ in range(self.args.connections):
            self.open_connection()
        for sock, conn in self.conns:
            self.start_streams(sock, conn)
        self.write_report()
        self.pump(time.monotonic() + self.args.hold)
        return 0


def main():
    p = argparse.ArgumentParser()
    p.add_argument("mode", choices=["nocert", "stall"])
    p.add_argument("--target", required=True)
    p.add_argument("--ca", required=True)
    p.add_argument("--cert")
    p.add_argument("--key")
    p.add_argument("--path", default="/grpc.health.v1.Health/Watch")
    p.add_argument("--connections", type=int, default=3)
    p.add_argument("--streams", type=int, default=100)
    p.add_argument("--hold", type=float, default=3600)
    p.add_argument("--report")
    args = p.parse_args()
    if args.mode == "nocert":
        return nocert(args)
    if not (args.cert and args.key and args.report):
        p.error("stall needs --cert, --key and --report")
    return Stall(args).run()


if __name__ == "__main__":
    sys.exit(main())
