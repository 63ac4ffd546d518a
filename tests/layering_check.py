#!/usr/bin/env python3
"""Fails when a lower layer of roced includes a higher one.

The layers (lib/CMakeLists.txt builds one library per lib/ module along the
same graph):

    util                          at the bottom: includes no other module
    hal                -> util
    model              -> util
    access             -> util
    reconcile          -> hal, model
    probe, metrics     -> hal, model
    diagnose           -> reconcile, probe, metrics
    agent/             -> any lib/ module
    tools/             -> any lib/ module (never agent/)

Each edge allows what lies below its target too. Every layer may include the
generated API ("roced/...") and third-party headers. An #include "X/..." is
attributed to module X by its first path component, as lib/'s include root
spells them ("hal/paths.h"); agent/ and tools/ include each other as
"agent/..." and "tools/...".

Usage: layering_check.py SOURCE_DIR   (exit 1 listing every violation)
"""
import os
import re
import sys

DIRECT = {
    "util": set(),
    "hal": {"util"},
    "model": {"util"},
    "access": {"util"},
    "reconcile": {"hal", "model"},
    "probe": {"hal", "model"},
    "metrics": {"hal", "model"},
    "mesh": {"util"},
    "diagnose": {"reconcile", "probe", "metrics"},
    "agent": {"diagnose", "reconcile", "probe", "metrics", "mesh", "hal", "model", "access", "util"},
    "tools": {"diagnose", "reconcile", "probe", "metrics", "mesh", "hal", "model", "access", "util"},
}
OURS = set(DIRECT)


def allowed(module):
    """The modules `module` may include: its own and everything below it."""
    seen, todo = {module}, [module]
    while todo:
        for dep in DIRECT[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def sources(root):
    """(module, path) of every C++ file of every layer."""
    for module in OURS:
        base = os.path.join(root, "lib", module) if module not in ("agent", "tools") else os.path.join(root, module)
        for dirpath, _, files in os.walk(base):
            for f in sorted(files):
                if f.endswith((".h", ".cc")):
                    yield module, os.path.join(dirpath, f)


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"/]+)/')


def violations(root):
    out = []
    for module, path in sources(root):
        ok = allowed(module)
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                if not m or m.group(1) not in OURS:
                    continue
                if m.group(1) not in ok:
                    rel = os.path.relpath(path, root)
                    out.append(f"{rel}:{n}: {module} includes {m.group(1)} "
                               f"({line.strip()}); {module} may include only "
                               f"{', '.join(sorted(ok - {module})) or 'no other module'}")
    return out


def main():
    root = sys.argv[1]
    found = violations(root)
    for v in found:
        print("layering violation:", v)
    files = sum(1 for _ in sources(root))
    print(f"layering: {files} files checked, {len(found)} violation(s)")
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
