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
    rollout            -> mesh, model
    agent/core         -> any lib/ module
    agent/runtimes     -> agent/core
    agent/api          -> agent/runtimes
    agent/serve        -> agent/api
    agent              -> agent/serve (agent/'s own files: flags, Daemon, main)
    tools/             -> any lib/ module (never agent/)

Each edge allows what lies below its target too. Every layer may include the
generated API ("roced/..."), third-party headers and lib/model/defaults.h
(every default written once: the roots hal::Paths starts from among them),
which itself includes nothing of ours. An #include "X/..." is
attributed to module X by its first path component, as lib/'s include root
spells them ("hal/paths.h"); tools/ is "tools/...", and agent/'s sub-layers
by their first two ("agent/core/agent.h" is agent/core, "agent/flags.h" the
top layer "agent").

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
    "rollout": {"mesh", "model"},
    "agent/core": {"diagnose", "reconcile", "probe", "metrics", "mesh", "rollout", "hal", "model", "access",
                   "util"},
    "agent/runtimes": {"agent/core"},
    "agent/api": {"agent/runtimes"},
    "agent/serve": {"agent/api"},
    "agent": {"agent/serve"},
    "tools": {"diagnose", "reconcile", "probe", "metrics", "mesh", "rollout", "hal", "model", "access", "util"},
}
OURS = set(DIRECT)
# Headers every layer may include; they include no module of ours.
SHARED_LEAVES = {"model/defaults.h"}
AGENT_SUBLAYERS = {m for m in DIRECT if m.startswith("agent/")}


def allowed(module):
    """The modules `module` may include: its own and everything below it."""
    seen, todo = {module}, [module]
    while todo:
        for dep in DIRECT[todo.pop()]:
            if dep not in seen:
                seen.add(dep)
                todo.append(dep)
    return seen


def base_of(root, module):
    if module == "tools" or module.startswith("agent"):
        return os.path.join(root, module)
    return os.path.join(root, "lib", module)


def module_of_file(root, path):
    """agent/'s files belong to the sub-layer folder they are in, or to the
    top layer "agent" when directly in agent/."""
    rel = os.path.relpath(path, os.path.join(root, "agent")).split(os.sep)
    if len(rel) > 1 and f"agent/{rel[0]}" in AGENT_SUBLAYERS:
        return f"agent/{rel[0]}"
    return "agent"


def sources(root):
    """(module, path) of every C++ file of every layer."""
    for module in sorted(OURS - AGENT_SUBLAYERS):
        for dirpath, _, files in os.walk(base_of(root, module)):
            for f in sorted(files):
                if f.endswith((".h", ".cc")):
                    path = os.path.join(dirpath, f)
                    yield (module_of_file(root, path) if module == "agent" else module), path


INCLUDE = re.compile(r'^\s*#\s*include\s+"(([^"/]+)/(?:([^"/]+)/)?[^"]*)"')


def included_module(m):
    """The layer an #include names: "agent/<sub>" for agent's sub-layers."""
    if m.group(2) == "agent" and m.group(3) and f"agent/{m.group(3)}" in AGENT_SUBLAYERS:
        return f"agent/{m.group(3)}"
    return m.group(2)


def violations(root):
    out = []
    for module, path in sources(root):
        ok = allowed(module)
        leaf = os.path.relpath(path, os.path.join(root, "lib")) in SHARED_LEAVES
        if leaf:
            ok = set()
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                m = INCLUDE.match(line)
                target = included_module(m) if m else None
                if target not in OURS or (m.group(1) in SHARED_LEAVES and not leaf):
                    continue
                if target not in ok:
                    rel = os.path.relpath(path, root)
                    out.append(f"{rel}:{n}: {module} includes {target} "
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
