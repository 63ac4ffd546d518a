#!/usr/bin/env python3
"""Attacks on roced's listeners, against the real binary on the fixture tree.

slowloris: six TCP connections to the metrics port that send nothing, each
  reopened as soon as roced closes it, held for longer than the request
  timeout; meanwhile /metrics and /readyz must each answer within 2 s
  (with civetweb's old 2 workers and 30 s timeout, 4 such connections made
  every scrape fail).
fd_exhaustion: roced under an open-file limit of 512 (hard, so it cannot
  raise it); 600 connections opened to its gRPC TCP port from one address
  (it gets its share; a call from another address answers, health stays
  good), then 600 from 60 addresses, held, then closed. While these are
  held the "grpc" component is unhealthy (connection cap); afterwards it is
  healthy again and a TCP call answers (gRPC 1.51's own listener logged
  "Failed accept4: Too many open files" and never accepted again). A
  connection that sends nothing is closed within 12 s (gRPC's handshake
  timeout was 120 s).
Usage: listener_attacks_e2e.py BIN_DIR SOURCE_DIR slowloris|fd_exhaustion
"""
import os
import re
import resource
import select
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from e2e_check import check, failures, free_port

BIN, SRC, MODE = sys.argv[1], sys.argv[2], sys.argv[3]




def get(port, path, timeout):
    """(status, body, seconds); status None when it failed."""
    t0 = time.monotonic()
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=timeout) as r:
            return r.status, r.read().decode(), time.monotonic() - t0
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode(), time.monotonic() - t0
    except OSError as e:
        return None, str(e), time.monotonic() - t0


def grpc_healthy(metrics_port):
    status, body, _ = get(metrics_port, "/metrics", 5)
    m = re.search(r'^roced_component_healthy\{component="grpc"\} (\d)', body or "", re.M)
    return None if status != 200 or not m else m.group(1) == "1"


def start_roced(work, grpc_port, metrics_port, nofile=None):
    config = os.path.join(work, "roced.yaml")
    with open(os.path.join(SRC, "deploy/examples/minimal.yaml")) as src, open(config, "w") as dst:
        dst.write(src.read())
    log = open(os.path.join(work, "roced.log"), "w")
    limit = (lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))) if nofile else None
    proc = subprocess.Popen(
        [os.path.join(BIN, "roced"), "--sysfs-root", os.path.join(SRC, "tests/fixtures/sysfs"),
         "--config", config, "--grpc-listen", f"127.0.0.1:{grpc_port}", "--insecure",
         "--metrics-listen", f"127.0.0.1:{metrics_port}", "--socket", os.path.join(work, "roced.sock"),
         "--state-dir", os.path.join(work, "state")],
        stdout=log, stderr=subprocess.STDOUT, preexec_fn=limit)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        if get(metrics_port, "/readyz", 1)[0] is not None:
            return proc
        time.sleep(0.1)
    check("roced starts", False, f"exit {proc.poll()}")
    return proc


def stop_roced(proc, work):
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=15)
        except subprocess.TimeoutExpired:
            proc.kill()
    if failures():
        sys.stdout.write(open(os.path.join(work, "roced.log")).read()[-4000:])


class IdleConnections(threading.Thread):
    """Holds `n` connections that send nothing, reopening each one closed."""

    def __init__(self, port, n):
        super().__init__(daemon=True)
        self.port, self.n, self.stop, self.reopened, self.conns = port, n, False, 0, []

    def run(self):
        while not self.stop:
            while len(self.conns) < self.n:
                self.conns.append(socket.create_connection(("127.0.0.1", self.port), timeout=2))
            readable, _, _ = select.select(self.conns, [], [], 0.02)
            for c in readable:
                if c.recv(1) == b"":
                    c.close()
                    self.conns.remove(c)
                    self.reopened += 1
        for c in self.conns:
            c.close()


def slowloris(work):
    grpc_port, metrics_port = free_port(), free_port()
    proc = start_roced(work, grpc_port, metrics_port)
    idle = IdleConnections(metrics_port, 6)
    idle.start()
    time.sleep(0.5)
    slowest, failed, scrapes = 0.0, [], 0
    until = time.monotonic() + 7  # past the 5 s request timeout: the idle ones are cut and come back
    while time.monotonic() < until:
        for path in ("/metrics", "/readyz"):
            status, body, took = get(metrics_port, path, 2)
            scrapes += 1
            slowest = max(slowest, took)
            if status != 200:
                failed.append(f"{path}: {status} {body[:80]} after {took:.2f} s")
        time.sleep(0.25)
    idle.stop = True
    idle.join()
    check(f"{scrapes} scrapes of /metrics and /readyz under 6 idle connections all answered 200 "
          f"within 2 s (slowest {slowest * 1000:.0f} ms)", not failed, "; ".join(failed[:4]))
    check(f"roced closed the idle connections and they came back ({idle.reopened} reopenings)",
          idle.reopened >= 6)
    stop_roced(proc, work)


def rocectl_status(grpc_port):
    return subprocess.run([os.path.join(BIN, "rocectl"), "--target", f"127.0.0.1:{grpc_port}", "--insecure",
                           "--timeout", "2s", "status"], capture_output=True, text=True).returncode


def open_many(port, n, sources=1):
    """n connections to 127.0.0.1:port from 127.0.0.2 .. 127.0.0.(1+sources)."""
    conns = []
    for i in range(n):
        s = socket.socket()
        s.bind((f"127.0.0.{2 + i % sources}", 0))
        s.setblocking(False)
        s.connect_ex(("127.0.0.1", port))
        conns.append(s)
    return conns


def seconds_until(condition, limit=10):
    """Seconds until condition() holds, polled every 0.2 s; None past limit."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < limit:
        if condition():
            return time.monotonic() - t0
        time.sleep(0.2)
    return None


def after(took):
    return f" ({took:.1f} s after)" if took is not None else " (not within 10 s)"


def fd_exhaustion(work):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    grpc_port, metrics_port = free_port(), free_port()
    proc = start_roced(work, grpc_port, metrics_port, nofile=512)
    log_path = os.path.join(work, "roced.log")
    check("roced logs the open-file limit it got", "open-file limit 512, hard limit 512" in open(log_path).read())
    check("a TCP call answers before the flood", rocectl_status(grpc_port) == 0)
    # One host: it gets its share (16 of the 128), the rest is closed.
    conns = open_many(grpc_port, 600)
    time.sleep(1.5)
    check("with 600 connections held from one address, a call from another answers",
          rocectl_status(grpc_port) == 0)
    check("and the grpc component stays healthy", grpc_healthy(metrics_port) is True)
    for c in conns:
        c.close()
    # 60 hosts, 10 connections each: the cap is reached.
    conns = open_many(grpc_port, 600, sources=60)
    time.sleep(1.5)
    during = grpc_healthy(metrics_port)
    check("with 600 connections held from 60 addresses, the grpc component is unhealthy", during is False,
          f"healthy={during}")
    for c in conns:
        c.close()
    answered = seconds_until(lambda: rocectl_status(grpc_port) == 0)
    check("after the connections close, a TCP call answers" + after(answered), answered is not None)
    healthy_at = seconds_until(lambda: grpc_healthy(metrics_port) is True)
    check("and the grpc component is healthy again" + after(healthy_at), healthy_at is not None)
    # The open-and-close pattern of the report, three more rounds.
    for _ in range(3):
        for c in open_many(grpc_port, 600, sources=60):
            c.close()
    answered = seconds_until(lambda: rocectl_status(grpc_port) == 0)
    check("after 3 more rounds of 600 connections opened and closed, a TCP call answers" + after(answered),
          answered is not None)
    # A connection that never sends its handshake frees its place (opened once
    # the listener has room again, so the clock starts at its accept).
    idle = socket.create_connection(("127.0.0.1", grpc_port))
    idle.settimeout(15)
    t0 = time.monotonic()
    try:
        while idle.recv(4096):
            pass
    except OSError:
        pass
    took = time.monotonic() - t0
    check(f"a connection that sends nothing is closed after {took:.1f} s (at most 12 s)", took <= 12)
    idle.close()
    text = open(log_path).read()
    check("the log says why connections were refused",
          "at the connection cap: 128" in text and "127.0.0.2 holds 16 connections" in text)
    check("gRPC's own accept never failed", "Failed accept4" not in text)
    stop_roced(proc, work)


with tempfile.TemporaryDirectory(prefix="roced-attack.") as scratch:
    {"slowloris": slowloris, "fd_exhaustion": fd_exhaustion}[MODE](scratch)
sys.exit(1 if failures() else 0)
