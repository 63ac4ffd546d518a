#!/usr/bin/env python3
"""systemd readiness and watchdog, as systemd sees them.

Runs the real roced on the fixture tree with NOTIFY_SOCKET pointing at a
datagram socket this script owns (what systemd does for Type=notify) and
WATCHDOG_USEC set (what WatchdogSec= does), then checks:
  - READY=1 arrives, and only once both endpoints answer (gRPC and /metrics
    are reachable at the moment it is received);
  - WATCHDOG=1 keeps arriving at no more than half the watchdog interval;
  - SIGTERM gives STOPPING=1 and a clean exit.
Usage: sd_notify_e2e.py BIN_DIR SOURCE_DIR
"""
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request

from e2e_check import check, failures, free_port

BIN, SRC = sys.argv[1], sys.argv[2]
WATCHDOG_USEC = 600_000  # half of it, 300 ms, is the longest allowed gap





def reachable(port):
    try:
        socket.create_connection(("127.0.0.1", port), timeout=1).close()
        return True
    except OSError:
        return False


def metrics_ok(port):
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=2) as r:
            return r.status == 200 and b"roced_build_info" in r.read()
    except OSError:
        return False


with tempfile.TemporaryDirectory(prefix="roced-notify.") as work:
    notify_path = os.path.join(work, "notify.sock")
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    sock.bind(notify_path)
    sock.settimeout(0.05)
    grpc_port, metrics_port = free_port(), free_port()
    config = os.path.join(work, "roced.yaml")
    with open(os.path.join(SRC, "deploy/examples/minimal.yaml")) as src, open(config, "w") as dst:
        dst.write(src.read())
    env = dict(os.environ, NOTIFY_SOCKET=notify_path, WATCHDOG_USEC=str(WATCHDOG_USEC))
    env.pop("WATCHDOG_PID", None)
    log = open(os.path.join(work, "roced.log"), "w")
    proc = subprocess.Popen(
        [os.path.join(BIN, "roced"), "--sysfs-root", os.path.join(SRC, "tests/fixtures/sysfs"),
         "--config", config, "--grpc-listen", f"127.0.0.1:{grpc_port}", "--insecure",
         "--metrics-listen", f"127.0.0.1:{metrics_port}", "--socket", os.path.join(work, "roced.sock"),
         "--state-dir", os.path.join(work, "state")],
        env=env, stdout=log, stderr=subprocess.STDOUT)

    messages = []  # (monotonic time, datagram)
    ready_at = None
    ready_endpoints = None
    deadline = time.monotonic() + 30
    # Collect until READY, then 3 s of watchdog pings.
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            data = sock.recv(4096).decode()
        except socket.timeout:
            continue
        now = time.monotonic()
        messages.append((now, data))
        if ready_at is None and "READY=1" in data.split("\n"):
            ready_at = now
            ready_endpoints = (reachable(grpc_port), metrics_ok(metrics_port))
            deadline = now + 3
    check("READY=1 received", ready_at is not None,
          f"got {[m for _, m in messages]}; roced exited {proc.poll()}")
    check("at READY the gRPC port accepts connections", bool(ready_endpoints and ready_endpoints[0]))
    check("at READY /metrics answers", bool(ready_endpoints and ready_endpoints[1]))
    pings = [t for t, m in messages if "WATCHDOG=1" in m.split("\n") and ready_at and t >= ready_at]
    check("WATCHDOG=1 is sent repeatedly after READY", len(pings) >= 5, f"{len(pings)} pings in 3 s")
    if len(pings) >= 2:
        gaps = [b - a for a, b in zip(pings, pings[1:])]
        worst = max(gaps)
        check(f"watchdog pings at most half WATCHDOG_USEC apart (worst gap {worst * 1000:.0f} ms)",
              worst <= WATCHDOG_USEC / 2e6 + 0.1, f"gap {worst:.3f} s")

    stop_deadline = None
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        stop_deadline = time.monotonic() + 15
    stopping = False
    while stop_deadline and time.monotonic() < stop_deadline:
        try:
            data = sock.recv(4096).decode()
            stopping |= "STOPPING=1" in data.split("\n")
        except socket.timeout:
            if proc.poll() is not None:
                break
    check("SIGTERM sends STOPPING=1", stopping)
    try:
        rc = proc.wait(timeout=15)
    except subprocess.TimeoutExpired:
        proc.kill()
        rc = "hung"
    check("roced exits 0 after SIGTERM", rc == 0, f"exit {rc}")
    if failures():
        log.close()
        sys.stdout.write(open(os.path.join(work, "roced.log")).read()[-3000:])

sys.exit(1 if failures() else 0)
