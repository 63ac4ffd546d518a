#!/usr/bin/env python3
"""Command runner for lab guests, and its client.

serve   (in the guest) listens on the management NIC; each TCP connection
        runs one command and streams its stdout and stderr back, then its
        exit status.
exec    (on the host, inside the lab namespace) sends a command and relays
        the output to its own stdout/stderr; exits with the command's status
        (128+N when killed by signal N, 255 when the node cannot be reached).
qmp     (on the host) sends one QMP command to a guest's QEMU.

Wire format: the client sends one JSON line
  {"argv": [...], "stdin": bool, "cwd": "/", "env": {...}, "timeout": secs}
then, if stdin is true, frames of type STDIN (an empty one is EOF). The server
answers with frames: 1 byte type, 4 bytes big-endian length, payload.
If the client goes away, the command's whole process group is killed.
"""

import argparse
import json
import os
import selectors
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time

STDIN, STDOUT, STDERR, EXIT, ERROR = 0, 1, 2, 3, 4
HDR = struct.Struct(">BI")


def send_frame(sock, kind, data=b""):
    sock.sendall(HDR.pack(kind, len(data)) + data)


def recv_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            return None
        buf += chunk
    return bytes(buf)


def recv_frame(sock):
    hdr = recv_exact(sock, HDR.size)
    if hdr is None:
        return None, None
    kind, length = HDR.unpack(hdr)
    data = recv_exact(sock, length) if length else b""
    if data is None:
        return None, None
    return kind, data


# ----------------------------------------------------------------- server

def reset_oom_score():
    # The runner protects itself from the OOM killer (see serve); commands
    # it runs get the default back.
    try:
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("0")
    except OSError:
        pass


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        sock = self.request
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        line = bytearray()
        while not line.endswith(b"\n"):
            c = sock.recv(1)
            if not c:
                return
            line += c
            if len(line) > 1 << 20:
                return
        try:
            req = json.loads(line)
            argv = [str(a) for a in req["argv"]]
            if not argv:
                raise ValueError("empty argv")
        except (ValueError, KeyError, TypeError) as e:
            send_frame(sock, ERROR, f"bad request: {e}".encode())
            send_frame(sock, EXIT, b"2")
            return
        env = dict(os.environ)
        env.update({str(k): str(v) for k, v in req.get("env", {}).items()})
        want_stdin = bool(req.get("stdin"))
        timeout = float(req.get("timeout") or 0)
        try:
            proc = subprocess.Popen(
                argv, cwd=req.get("cwd") or "/", env=env,
                stdin=subprocess.PIPE if want_stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                start_new_session=True, preexec_fn=reset_oom_score)
        except OSError as e:
            send_frame(sock, ERROR, f"{argv[0]}: {e.strerror}".encode())
            send_frame(sock, EXIT, b"127")
            return
        self.relay(sock, proc, want_stdin, timeout)

    @staticmethod
    def kill(proc):
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass

    def relay(self, sock, proc, want_stdin, timeout):
        sel = selectors.DefaultSelector()
        sel.register(proc.stdout, selectors.EVENT_READ, STDOUT)
        sel.register(proc.stderr, selectors.EVENT_READ, STDERR)
        sel.register(sock, selectors.EVENT_READ, STDIN)
        open_pipes = 2
        deadline = time.monotonic() + timeout if timeout > 0 else None
        timed_out = False
        stdin_buf = bytearray()
        while open_pipes:
            wait = None
            if deadline is not None:
                wait = max(0.0, deadline - time.monotonic())
            events = sel.select(wait)
            if deadline is not None and time.monotonic() >= deadline:
                timed_out = True
                self.kill(proc)
                deadline = None
            for key, _ in events:
                if key.data == STDIN:
                    try:
                        chunk = sock.recv(65536)
                    except OSError:
                        chunk = b""
                    if not chunk:  # client gone
                        self.kill(proc)
                        sel.unregister(sock)
                        continue
                    if not want_stdin:
                        continue
                    stdin_buf += chunk
                    while len(stdin_buf) >= HDR.size:
                        kind, length = HDR.unpack(stdin_buf[:HDR.size])
                        if len(stdin_buf) < HDR.size + length:
                            break
                        data = bytes(stdin_buf[HDR.size:HDR.size + length])
                        del stdin_buf[:HDR.size + length]
                        try:
                            if length:
                                proc.stdin.write(data)
                                proc.stdin.flush()
                            else:
                                proc.stdin.close()
                        except (BrokenPipeError, ValueError):
                            pass
                    continue
                data = os.read(key.fileobj.fileno(), 65536)
                if not data:
                    sel.unregister(key.fileobj)
                    open_pipes -= 1
                    continue
                try:
                    send_frame(sock, key.data, data)
                except OSError:
                    self.kill(proc)
        code = proc.wait()
        if code < 0:
            code = 128 - code
        if timed_out:
            try:
                send_frame(sock, ERROR, b"timed out; killed\n")
            except OSError:
                pass
            code = 124
        try:
            send_frame(sock, EXIT, str(code).encode())
        except OSError:
            pass


class Server(socketserver.ThreadingMixIn, socketserver.TCPServer):
    daemon_threads = True
    allow_reuse_address = True


def serve(args):
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)
    try:  # a test that exhausts the guest's memory must not cut us off
        with open("/proc/self/oom_score_adj", "w") as f:
            f.write("-1000")
    except OSError:
        pass
    srv = None
    for _ in range(100):  # the NIC address may take a moment
        try:
            srv = Server((args.bind, args.port), Handler)
            break
        except OSError:
            time.sleep(0.1)
    if srv is None:
        print(f"runner: cannot bind {args.bind}:{args.port}", file=sys.stderr)
        return 1
    if args.ready_file:
        with open(args.ready_file, "w") as f:
            f.write(f"{time.time()}\n")
    print(f"runner: serving on {args.bind}:{args.port}", file=sys.stderr, flush=True)
    srv.serve_forever()
    return 0


# ----------------------------------------------------------------- client

def client_exec(args):
    argv = args.argv
    if argv and argv[0] == "--":
        argv = argv[1:]
    if not argv:
        print("lab exec: no command", file=sys.stderr)
        return 2
    sock = None
    deadline = time.monotonic() + args.connect_timeout
    while True:
        try:
            sock = socket.create_connection(("127.0.0.1", args.port), timeout=5)
            break
        except OSError as e:
            if time.monotonic() >= deadline:
                if not args.quiet:
                    print(f"lab exec: {args.node} is not reachable ({e.strerror}); "
                          "is the lab up?", file=sys.stderr)
                return 255
            time.sleep(0.3)
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    env = {}
    for kv in args.env or []:
        k, _, v = kv.partition("=")
        env[k] = v
    req = {"argv": argv, "stdin": args.interactive, "cwd": args.cwd,
           "env": env, "timeout": args.timeout}
    sock.sendall(json.dumps(req).encode() + b"\n")

    if args.interactive:
        def pump():
            try:
                while True:
                    data = os.read(0, 65536)
                    send_frame(sock, STDIN, data)
                    if not data:
                        return
            except OSError:
                pass
        threading.Thread(target=pump, daemon=True).start()

    out, err = sys.stdout.buffer, sys.stderr.buffer
    while True:
        try:
            kind, data = recv_frame(sock)
        except OSError:
            kind = None
        if kind is None:
            print(f"lab exec: connection to {args.node} lost", file=sys.stderr)
            return 255
        if kind == STDOUT:
            out.write(data)
            out.flush()
        elif kind in (STDERR, ERROR):
            if kind == ERROR:
                data = b"lab exec: " + data.rstrip(b"\n") + b"\n"
            err.write(data)
            err.flush()
        elif kind == EXIT:
            return int(data or b"255")


def client_qmp(args):
    """Send one QMP command (JSON) to a QEMU -qmp unix socket."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(10)
    s.connect(args.socket)
    f = s.makefile("rwb")

    def reply():
        while True:
            line = f.readline()
            if not line:
                raise SystemExit("qmp: connection closed")
            msg = json.loads(line)
            if "return" in msg or "error" in msg:
                return msg

    f.readline()  # greeting
    f.write(b'{"execute": "qmp_capabilities"}\n')
    f.flush()
    reply()
    cmd = {"execute": args.command}
    if args.arguments:
        cmd["arguments"] = json.loads(args.arguments)
    f.write(json.dumps(cmd).encode() + b"\n")
    f.flush()
    msg = reply()
    if "error" in msg:
        print(f"qmp {args.command}: {msg['error'].get('desc')}", file=sys.stderr)
        return 1
    if msg.get("return"):
        print(json.dumps(msg["return"]))
    return 0


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("serve")
    s.add_argument("--bind", required=True)
    s.add_argument("--port", type=int, required=True)
    s.add_argument("--ready-file")
    e = sub.add_parser("exec")
    e.add_argument("--port", type=int, required=True)
    e.add_argument("--node", default="node")
    e.add_argument("-i", "--interactive", action="store_true",
                   help="forward stdin")
    e.add_argument("--timeout", type=float, default=0,
                   help="kill the command after this many seconds (exit 124)")
    e.add_argument("--connect-timeout", type=float, default=0)
    e.add_argument("--cwd", default="/")
    e.add_argument("--env", action="append")
    e.add_argument("--quiet", action="store_true")
    e.add_argument("argv", nargs=argparse.REMAINDER)
    q = sub.add_parser("qmp")
    q.add_argument("--socket", required=True)
    q.add_argument("command")
    q.add_argument("arguments", nargs="?")
    args = p.parse_args()
    if args.cmd == "serve":
        return serve(args)
    if args.cmd == "exec":
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        return client_exec(args)
    return client_qmp(args)


if __name__ == "__main__":
    sys.exit(main())
