#!/usr/bin/env python3
"""The layer graph as the build declares it, and what the compiler cannot see.

The graph lives in the CMake files only: lib/CMakeLists.txt's
roced_module(NAME ... DEPS ...), agent/CMakeLists.txt's
roced_agent_layer(NAME ... DEPS ...) and the target_link_libraries(... PUBLIC
...) of roced_agent_state and rocectl_lib. Each layer's sources see only the
include roots of the targets it links (roced_include_root), so the build
itself refuses an #include of an undeclared layer; tests/layering/ proves it.

This script reads that graph and fails when
  - an #include in agent/, lib/, tools/, tests/ or bench/ climbs with ".."
    (the one way past the include roots: a quoted include is first looked
    up beside the including file);
  - a metric family is built outside lib/metrics (every family is defined
    and registered there, one owner per source; the runtimes set values);
  - docs/design.md's layer table (between the "layers:" markers) is not
    the graph as the CMake files declare it. --write rewrites it.

Usage: layering_check.py SOURCE_DIR [--write]   (exit 1 listing each problem)
"""
import os
import re
import sys

BEGIN = "<!-- layers: written by tests/layering_check.py --write from the CMake files -->"
END = "<!-- end of layers -->"
CHECKED_TREES = ("agent", "lib", "tools", "tests", "bench")
CLIMB = re.compile(r'^\s*#\s*include\s+"([^"]*\.\.[^"]*)"')
FAMILY = re.compile(r"prometheus::Build(Counter|Gauge|Histogram|Summary|Info)\(")
FAMILY_TREES = ("agent", "lib", "tools")


def layer_name(target):
    """A CMake target as the table names it, or None for what is not ours."""
    if "${" in target:
        return None
    if target == "roced_lib":
        return "every lib/ module"
    if target == "roced_defaults":
        return "model/defaults.h"
    if target == "roced_agent_lib":
        return "agent"
    if target == "rocectl_lib":
        return "tools/rocectl"
    if target.startswith("roced_agent_"):
        return "agent/" + target[len("roced_agent_"):]
    if target.startswith("roced_") and not target.startswith(("roced_proto", "roced_civetweb")):
        return target[len("roced_"):]
    return None


def calls(text, function):
    """The argument words of every call of `function` in a CMake file."""
    for m in re.finditer(r"^\s*" + re.escape(function) + r"\(([^)]*)\)", text, re.M | re.S):
        words = []
        for line in m.group(1).splitlines():
            words += line.split("#", 1)[0].split()
        yield words


def graph(root):
    """{layer: [layers it links]} in the order the CMake files declare them."""
    out = {}
    with open(os.path.join(root, "lib", "CMakeLists.txt"), encoding="utf-8") as f:
        lib = f.read()
    with open(os.path.join(root, "agent", "CMakeLists.txt"), encoding="utf-8") as f:
        agent = f.read()
    with open(os.path.join(root, "tools", "rocectl", "CMakeLists.txt"), encoding="utf-8") as f:
        tools = f.read()
    for text, function, prefix in ((lib, "roced_module", "roced_"), (agent, "roced_agent_layer", "roced_agent_")):
        for words in calls(text, function):
            if not words or words[0] == "name":  # the function's own definition
                continue
            deps = words[words.index("DEPS") + 1:] if "DEPS" in words else []
            out[layer_name(prefix + words[0])] = [d for d in map(layer_name, deps) if d]
    for text in (agent, tools):
        for words in calls(text, "target_link_libraries"):
            if len(words) > 2 and words[1] == "PUBLIC" and layer_name(words[0]) not in (None, *out.keys()):
                out[layer_name(words[0])] = [d for d in map(layer_name, words[2:]) if d]
    return out


def table(g):
    """One row per set of dependencies, the layers that share it together."""
    rows = {}
    for layer, deps in g.items():
        rows.setdefault(", ".join(deps) or "(nothing of ours)", []).append(layer)
    width = max(len(", ".join(layers)) for layers in rows.values())
    lines = [f"{', '.join(layers).ljust(width)}  ->  {deps}" for deps, layers in rows.items()]
    return "\n".join([BEGIN, "```", *lines, "```", END])


def climbs(root):
    out = []
    for tree in CHECKED_TREES:
        for dirpath, _, files in os.walk(os.path.join(root, tree)):
            for name in sorted(files):
                if not name.endswith((".h", ".cc", ".c")):
                    continue
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        m = CLIMB.match(line)
                        if m:
                            out.append(f"{os.path.relpath(path, root)}:{n}: #include \"{m.group(1)}\" climbs "
                                       "out of the include roots; include it by its layer's path")
    return out


def families_outside(root):
    out = []
    for tree in FAMILY_TREES:
        for dirpath, _, files in os.walk(os.path.join(root, tree)):
            if os.path.relpath(dirpath, root).startswith(os.path.join("lib", "metrics")):
                continue
            for name in sorted(f for f in files if f.endswith((".h", ".cc"))):
                path = os.path.join(dirpath, name)
                with open(path, encoding="utf-8", errors="replace") as f:
                    for n, line in enumerate(f, 1):
                        if FAMILY.search(line):
                            out.append(f"{os.path.relpath(path, root)}:{n}: a metric family built outside "
                                       "lib/metrics; define it in lib/metrics/families.h and report to it")
    return out


def main():
    root = sys.argv[1]
    write = "--write" in sys.argv[2:]
    g = graph(root)
    problems = climbs(root) + families_outside(root)
    design = os.path.join(root, "docs", "design.md")
    with open(design, encoding="utf-8") as f:
        text = f.read()
    start, stop = text.find(BEGIN), text.find(END)
    if start < 0 or stop < start:
        problems.append(f"docs/design.md: no layer table between '{BEGIN}' and '{END}'")
    elif text[start:stop + len(END)] != table(g):
        if write:
            with open(design, "w", encoding="utf-8") as f:
                f.write(text[:start] + table(g) + text[stop + len(END):])
            print("layering: docs/design.md's layer table rewritten")
        else:
            problems.append("docs/design.md: the layer table is not the CMake files' graph "
                            "(python3 tests/layering_check.py . --write rewrites it)")
    for p in problems:
        print("layering:", p)
    print(f"layering: {len(g)} layers read from CMake, {len(problems)} problem(s)")
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
