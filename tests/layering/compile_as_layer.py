#!/usr/bin/env python3
"""Compiles tests/layering/include_probe.cc exactly as the build compiles it
for one layering case: the command the build system would run (from
compile_commands.json), run here without the build tool, so the case can
run beside another build in the same tree. Its output is the compiler's;
its exit status the compiler's.

Usage: compile_as_layer.py BUILD_DIR TARGET
"""
import json
import os
import shlex
import subprocess
import sys


def main():
    build, target = sys.argv[1], sys.argv[2]
    with open(os.path.join(build, "compile_commands.json"), encoding="utf-8") as f:
        entries = json.load(f)
    marker = f"/CMakeFiles/{target}.dir/"
    found = [e for e in entries if marker in e.get("output", "") or marker in e.get("command", "")]
    if len(found) != 1:
        print(f"compile_as_layer: {len(found)} compile commands for {target} in {build}/compile_commands.json")
        return 2
    entry = found[0]
    args = entry["arguments"] if "arguments" in entry else shlex.split(entry["command"])
    args[args.index("-o") + 1] = os.devnull
    print(" ".join(shlex.quote(a) for a in args), flush=True)
    return subprocess.run(args, cwd=entry["directory"], check=False).returncode


if __name__ == "__main__":
    sys.exit(main())
