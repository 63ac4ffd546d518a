"""What the Python e2e scripts share: TAP-like check lines with a failure
count, and a free loopback port."""
import socket

_failures = 0


def check(what, cond, detail=""):
    """Prints "ok   - WHAT" or "FAIL - WHAT (DETAIL)" and counts a failure."""
    global _failures
    print(("ok   - " if cond else "FAIL - ") + what + ("" if cond else f" ({detail})"), flush=True)
    if not cond:
        _failures += 1


def failures():
    """How many checks have failed so far."""
    return _failures


def free_port():
    """A loopback TCP port nothing listens on now."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port
